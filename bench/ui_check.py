"""The Dagster UI as a user sees it, in a real headless browser (Debian's `chromium`: no browser download works
here): a small replay batch from the CLI into a fresh instance (or `--home` of your own, e.g. `.dagster_home`
after `make run`), `dg dev`, then each page the user opens is rendered (its JavaScript run) and read. Prints, per
page, what was looked for, whether the rendered page shows it, how long it took, and a screenshot beside it.

    .venv/bin/python bench/ui_check.py [--home DIR] [--out DIR]

Exit 1 when a page lacks what it should show. tests/test_ui.py asks the same server's GraphQL API in CI; this
script is the browser's view (not in CI: chromium is a 300 MB install)."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from mcp_evals_pipeline.launched_runs import LOCATION_NAME
from mcp_evals_pipeline.procs import free_port, kill_tree

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
CASE = "usage-ops-v3-01-restart-by-id"
BATCH = "2026-11-30"



def pages(partitions: int, trial_runs: list[str]) -> list[tuple[str, list[str], list[str]]]:
    """(path, what the rendered page must show, what it must not). The partition list is virtualized (only the
    rows in view are in the DOM): its count says that it holds the catalog's keys and nothing else. Run ids show
    by their first 8 characters."""
    return [
        ("/runs", ["catalog_job", "trials_job", "reports_job"], ["__ASSET_JOB"]),
        # The CLI's trial runs under their job, as the UI's own launches are (they were "No runs found")
        (f"/locations/{LOCATION_NAME}/jobs/trials_job/runs", [r[:8] for r in trial_runs], ["No runs found"]),
        # The Timeline draws runs by their code location (it was empty for the CLI's runs)
        ("/overview/activity/timeline", [LOCATION_NAME, "catalog_job", "trials_job", "reports_job"], []),
        ("/jobs", ["catalog_job", "trials_job", "reports_job", "synthesis_job"], []),
        ("/assets/task_catalog", ["task_catalog", "trial_partitions"], ["Never materialized"]),
        ("/assets/trial?view=checks", ["trial_rows_are_current", "trial_outcome"], ["Not evaluated"]),
        # The outcome check failed for the trial (t1 replays an unsafe session), on the check's page
        ("/assets/trial?view=checks&checkDetail=trial_outcome",
         ["Evaluation result", "Failed", f"{BATCH}|{CASE}--bare--t1", "other-writes"], []),
        # The trial's check table (the failing check first) and file paths in its materialization's metadata
        ("/assets/trial?view=events", ["Show schema", "other-writes", "trial_folder", "transcript.jsonl"], []),
        ("/assets/trial?view=partitions", [f"{partitions:,} Partitions"], ["--t4", "--t5"]),
        ("/assets/batch_scorecard", ["grid.png", "usage_valid_scored", "[Show Markdown]", "pass_rates", "wilson_95",
                                     "[0.000, "], []),
        ("/automation", ["baseline_schedule", "usage_schedule", "batch_reports_schedule", "synthesis_schedule"], []),
    ]


def _trial_runs(home: str) -> list[str]:
    import dagster as dg

    with dg.DagsterInstance.from_config(home) as instance:
        return [r.run_id for r in instance.get_runs(dg.RunsFilter(job_name="trials_job"))]


def _partitions(home: str) -> int:
    """What the trial asset's partitions should number: batch dates so far x the keys the instance registered."""
    import dagster as dg

    from mcp_evals_pipeline.defs.partitions import trial_partitions

    with dg.DagsterInstance.from_config(home) as instance:
        return len(trial_partitions.get_partition_keys(dynamic_partitions_store=instance))


def _browser() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        sys.exit("no chromium: install Debian's (apt-get install -y chromium); no browser download works here")
    return found


def _render(browser: str, url: str, shot: Path) -> tuple[str, float]:
    """The page's DOM after its scripts ran (virtual time: the UI's queries answered), and a screenshot."""
    common = [browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
              "--window-size=1440,1000", "--virtual-time-budget=20000", "--run-all-compositor-stages-before-draw"]
    started = time.perf_counter()
    dom = subprocess.run([*common, "--dump-dom", url], capture_output=True, text=True, timeout=180).stdout
    elapsed = time.perf_counter() - started
    subprocess.run([*common, f"--screenshot={shot}", url], capture_output=True, timeout=180, check=False)
    return dom, elapsed


def _wait(port: int, server: subprocess.Popen, timeout_s: float = 180) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            sys.exit("dg dev exited before the UI came up")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info", timeout=5):
                return
        except OSError:
            time.sleep(1)
    sys.exit(f"the UI did not come up in {timeout_s:.0f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", type=Path, help="a DAGSTER_HOME with runs (default: a fresh one, one batch)")
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "mcp-evals-ui-check")
    args = parser.parse_args()
    browser = _browser()
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="ui-check-"))
    env = dict(os.environ)
    if args.home is None:
        env |= {"DAGSTER_HOME": str(work / "home"), "MCP_EVALS_RESULTS_DIR": str(work / "results")}
        started = time.perf_counter()
        batch = subprocess.run([str(BIN / "mcp-evals"), "eval", "--agent", "replay", "--task", CASE, "--condition",
                                "bare", "--trials", "1", "--batch-date", BATCH, "--no-verify"], cwd=REPO, env=env,
                               capture_output=True, text=True, timeout=600)
        if batch.returncode != 0:
            sys.exit(f"the batch failed: {batch.stderr[-2000:]}")
        print(f"batch: 1 replay trial, its catalog and reports runs, {time.perf_counter() - started:.1f} s")
    else:
        env["DAGSTER_HOME"] = str(args.home.resolve())
    # before the server starts: nothing to leave running
    checks = pages(_partitions(env["DAGSTER_HOME"]), _trial_runs(env["DAGSTER_HOME"])[:5])
    port = free_port()
    started = time.perf_counter()
    with open(work / "dg-dev.log", "wb") as log:
        server = subprocess.Popen([str(BIN / "dg"), "dev", "--host", "127.0.0.1", "--port", str(port)], cwd=REPO,
                                  env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    failed = 0
    try:
        _wait(port, server)
        print(f"dg dev: up in {time.perf_counter() - started:.1f} s on port {port}; screenshots in {args.out}")
        for path, wanted, unwanted in checks:
            shot = args.out / (path.strip("/").replace("/", "_").replace("?", "_").replace("=", "-") + ".png")
            dom, elapsed = _render(browser, f"http://127.0.0.1:{port}{path}", shot)
            shot.with_suffix(".html").write_text(dom)  # what was searched, to read when a page fails
            missing = [w for w in wanted if w not in dom]
            present = [u for u in unwanted if u in dom]
            ok = not missing and not present
            failed += not ok
            detail = "" if ok else f"  missing {missing}" * bool(missing) + f"  present {present}" * bool(present)
            print(f"{'ok  ' if ok else 'FAIL'} {path:<34} {elapsed:5.1f} s  {len(dom) // 1024:5d} KB DOM{detail}")
    finally:
        kill_tree(server)
        if args.home is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{len(checks) - failed}/{len(checks)} pages show what they should")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
