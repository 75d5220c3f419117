"""Suites: the baseline schedule, suite selection, the SDK's registry release on every row, and trend series that
continue the imported real runs across a task-set boundary instead of pooling or hiding them."""

from __future__ import annotations

import datetime as dt
import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import dagster as dg
import pytest

from mcp_evals_pipeline.legacy_import import import_runs
from mcp_evals_pipeline.reporting.scorecard import render_report
from mcp_evals_pipeline.runs import write_run_file
from mcp_evals_pipeline.sql_models import materialize_models
from mcp_evals_pipeline.store import TrialStore
from mcp_evals_pipeline.tasks.catalog import discover_tasks, in_tier
from mcp_evals_pipeline.tasks.suites import SuiteError, expand_selection, get_suite, load_suites, suite_of
from mcp_evals_pipeline.trials import TrialSpec, run_trial

from .conftest import TASKS
from .support.responses_server import ScriptedResponses, message, turn, write_file

SERIES = ("codex", "gpt-5.6-terra", "noskill+blank")


def test_the_baseline_schedule_is_nine_tasks_x_noskill_blank_x_three() -> None:
    from mcp_evals_pipeline.defs.trials.schedules import baseline_schedule

    with dg.instance_for_test() as instance:
        context = dg.build_schedule_context(scheduled_execution_time=dt.datetime(2026, 12, 2, 14, tzinfo=dt.UTC),
                                            instance=instance)
        requests = list(baseline_schedule(context))
    assert len(requests) == 27
    keys = [r.partition_key.keys_by_dimension for r in requests]
    assert {k["batch_date"] for k in keys} == {"2026-12-02"}
    trials = [k["trial"].split("--") for k in keys]
    suite = get_suite("mcp-use")
    assert sorted({t[0] for t in trials}) == sorted(suite.baseline_tasks) and len(suite.baseline_tasks) == 9
    assert not {"v4-12-oauth-whoami", "v4-13-oauth-whoami-okta"} & {t[0] for t in trials}  # in the suite, not here
    assert {t[1] for t in trials} == {"noskill+blank"} and sorted({t[2] for t in trials}) == ["t1", "t2", "t3"]
    assert all(r.run_config["ops"]["trial"]["config"]["agent"] == "codex" for r in requests)
    assert len({r.run_key for r in requests}) == 27


def test_suite_selection_and_membership() -> None:
    suites = load_suites(TASKS)
    assert set(suites) >= {"mcp-use", "mcp-python"}
    assert expand_selection(["x"], ["mcp-use"], TASKS) == ["x", *suites["mcp-use"].tasks]
    with pytest.raises(SuiteError, match="no such suite 'nope'"):
        expand_selection([], ["nope"], TASKS)
    # The imported runs' v2-* rows are the mcp-use suite's history; our first Python v2-01 (same id, other prompt)
    # is the Python suite's.
    python_v2_01 = json.loads((TASKS / "prompt-hashes.lock.json").read_text())["v2-01-basic-tool-server"]
    assert suite_of("v2-01-basic-tool-server", "cc0f215b3435", TASKS) == "mcp-use"
    assert suite_of("v2-01-basic-tool-server", python_v2_01, TASKS) == "mcp-python"
    assert suite_of("v5-01-basic-tool-server", None, TASKS) == "mcp-use"


def test_the_pr_tier_of_the_build_suites_pairs_the_sdks_and_names_only_their_tasks(tmp_path: Path) -> None:
    """`eval --tier pr` (make run's build batch) takes the build tasks the suites list under `pr`: the same
    assignments (slugs) in both SDKs' suites, so the SDK comparison has pairs; a list naming a task the suite lacks
    is refused."""
    suites = load_suites(TASKS)
    slug = {task: re.sub(r"^(py-)?v[0-9]+-[0-9]+-", "", task)  # as sdk_comparison.sql names the assignment
            for suite in suites.values() for task in suite.tasks}
    use, python = suites["mcp-use"].pr, suites["mcp-python"].pr
    assert use and sorted(slug[t] for t in use) == sorted(slug[t] for t in python)
    tasks = {t.id: t for t in discover_tasks(TASKS)[0]}
    assert sorted(t for t in tasks if tasks[t].kind == "build" and in_tier(tasks[t], "pr")) == sorted(use + python)
    assert all(in_tier(t, "full") for t in tasks.values())
    spec = {"title": "t", "sdkPackage": "p", "registry": "npm", "tasks": ["a"], "pr": ["b"]}
    (tmp_path / "suites.json").write_text(json.dumps({"one": spec}))
    with pytest.raises(SuiteError, match="pr names b, which are not in tasks"):
        load_suites(tmp_path)


def test_a_suite_file_putting_a_task_in_two_suites_is_refused(tmp_path: Path) -> None:
    spec = {"title": "t", "sdkPackage": "p", "registry": "npm", "tasks": ["a"]}
    (tmp_path / "suites.json").write_text(json.dumps({"one": spec, "two": spec}))
    with pytest.raises(SuiteError, match="'a' is in suites 'one' and 'two'"):
        load_suites(tmp_path)


class _Registry(BaseHTTPRequestHandler):
    """npm's /<pkg>/latest and PyPI's /<pkg>/json, with the versions the test sets."""

    versions: ClassVar[dict[str, str]] = {}

    def do_GET(self) -> None:
        parts = self.path.strip("/").split("/")
        version = self.versions.get(parts[0])
        if version is None:
            self.send_response(404)
            self.end_headers()
            return
        body = {"version": version} if parts[-1] == "latest" else {"info": {"version": version}}
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[dict[str, str]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Registry)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setenv("MCP_EVALS_SDK_REGISTRY", "on")
    monkeypatch.setenv("MCP_EVALS_NPM_REGISTRY", base)
    monkeypatch.setenv("MCP_EVALS_PYPI_URL", base)
    monkeypatch.setenv("MCP_EVALS_CACHE_DIR", str(tmp_path / "cache"))
    _Registry.versions = {"mcp-use": "2.6.0", "mcp": "2.4.1"}
    try:
        yield _Registry.versions
    finally:
        server.shutdown()


def test_the_registry_release_lands_on_rows_and_in_the_manifest(registry: dict[str, str]) -> None:
    from mcp_evals_pipeline.sdk_registry import latest_version

    assert latest_version("mcp-use", "npm") == "2.6.0"
    assert latest_version("mcp", "pypi") == "2.4.1"
    registry["mcp-use"] = "2.7.0"  # cached for the batch: one lookup per package, not one per trial
    assert latest_version("mcp-use", "npm") == "2.6.0"
    assert latest_version("no-such-package", "npm") is None


def _codex_session(solution: Path) -> list[dict]:
    files = sorted(p for p in solution.rglob("*") if p.is_file() and "node_modules" not in p.parts)
    return [
        *[turn(write_file(str(p.relative_to(solution)), p.read_text())) for p in files],
        turn(message("Done: the server is written.")),
    ]


@pytest.mark.long
def test_a_codex_batch_of_the_suite_continues_the_imported_series(
        legacy_runs: Path, tmp_path: Path, registry: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """After import-runs of the 259 real runs, a codex batch of the mcp-use suite lands on the imported
    codex / gpt-5.6-terra / noskill+blank series, marked as a task-set boundary at its first batch, and carries the
    SDK package with the registry's release."""
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.delenv("CODEX_API_KEY", raising=False)
    store = TrialStore(tmp_path / "evals.duckdb")
    import_runs(legacy_runs, store, tmp_path / "runs")
    task = "v5-01-basic-tool-server"
    with ScriptedResponses(_codex_session(TASKS / task / "golden")) as server:
        record = run_trial(TrialSpec(task_id=task, condition="noskill+blank", trial=1, batch_date="2026-12-02",
                                     batch_id="2026-12-02", agent="codex", skip_judge=True, time_budget_s=180.0,
                                     options={"base_url": server.base_url, "max_retries": 1}),
                           store=store, results_root=tmp_path / "runs")
    assert record.valid and record.grade.contract_pass, (record.error, record.grade.first_failure)
    assert (record.suite, record.sdk_package, record.sdk_registry_latest) == ("mcp-use", "mcp-use", "2.6.0")
    with store.connect() as con:
        materialize_models(con, names=["stg_trials", "trends"])
        rows = con.execute(
            "SELECT batch_id, suite, task_set_boundary, grader_boundary, tasks FROM trends "
            "WHERE agent_runner = ? AND agent_model = ? AND condition = ? ORDER BY batch_date, batch_id",
            list(SERIES)).fetchall()
        suites = con.execute("SELECT DISTINCT suite FROM trials").fetchall()
        # "Did a new SDK release move the pass rate?" is one query over the rows.
        by_release = con.execute(
            "SELECT sdk_package, sdk_registry_latest, count(*) FROM trials WHERE suite = 'mcp-use' "
            "AND sdk_registry_latest IS NOT NULL GROUP BY ALL").fetchall()
    assert suites == [("mcp-use",)]  # the imported runs and the new batch: one suite, no '(none)'
    assert len(rows) == 31 and {r[1] for r in rows} == {"mcp-use"}  # 30 imported batches + ours, one series
    new = rows[-1]
    assert new[0] == "2026-12-02" and new[2] is True and new[3] is True and new[4] == 1
    assert by_release == [("mcp-use", "2.6.0", 1)]

    # The run's manifest and scorecard say which SDK the suite tested, and the suite's own figures.
    run = write_run_file(tmp_path / "runs" / record.run_id, store)
    assert run.manifest.suites == {"mcp-use": {"sdkPackage": "mcp-use", "registryLatest": "2.6.0"}}
    with store.connect() as con:
        materialize_models(con)
        report = render_report(record.run_id, con)
    assert (f"- `mcp-use` (1 task(s); SDK mcp-use {record.sdk_version}; registry latest 2.6.0): pass rate 100% "
            "(1/1 valid scored, 0 invalid)") in report, report
