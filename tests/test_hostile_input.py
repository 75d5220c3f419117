"""Files and ids from outside, written to hurt: each is refused with exit 2, naming the file and the field, before
anything is written (no run directory, no trial directory, no row, no case directory, no Dagster instance).

Each test here failed before record_checks.py and the checks beside it: `import-runs` ended in a DuckDB traceback
(exit 1) and indexed a task named `../../x`, `merge-shards` crashed after writing trial directories, `import-qa`
wrote a case directory per pair of any file, a bad `--batch-id` was refused after `dagster.yaml` was created,
`verify-tasks` exited 1 on a typo, and a call could make the grader wait for a day."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner, Result

from mcp_evals_pipeline.cli import main
from mcp_evals_pipeline.record_checks import MAX_QA_BYTES, MAX_QA_PAIRS, MAX_TEXT_BYTES
from mcp_evals_pipeline.tasks.catalog import TaskLoadError, parse_contract

from .conftest import REPO, write_task
from .support.cli_env import cli_env

LEGACY = REPO / "tests" / "fixtures" / "legacy_runs"
GOOD, OTHER = sorted(p.name for p in LEGACY.iterdir() if (p / "run.json").is_file())[:2]
QA_SERVER_FROM = "usage-ops-v3-04-logs-question"

# (field as the JSON path names it, how to plant it in a run.json's first trial, the value)
HOSTILE = {
    "huge-integer": ("trials[0].perf.durationMs", ("perf", "durationMs"), 10**40),  # "1e40": DuckDB BIGINT overflow
    "int32-overflow": ("trials[0].perf.turns", ("perf", "turns"), 2**40),
    "infinity": ("trials[0].perf.costUsd", ("perf", "costUsd"), float("inf")),
    "task-path": ("trials[0].task", ("task",), "../../x"),
    "bad-timestamp": ("trials[0].timestamp", ("timestamp",), "2026-13-45T99:00:00Z"),
}


def _cli(tmp_path: Path, *args: str) -> Result:
    env = {"MCP_EVALS_RESULTS_DIR": str(tmp_path / "results"), "MCP_EVALS_DB": str(tmp_path / "results" / "db"),
           "DAGSTER_HOME": str(tmp_path / "dh")}
    return CliRunner().invoke(main, list(args), env=env, terminal_width=400)


def _said(result: Result) -> str:
    return " ".join((result.stderr + result.stdout).split())


def _hostile_run(dest: Path, plant: tuple[str, ...], value: object, run: str = OTHER) -> Path:
    """A copy of a real run whose first trial carries `value` at `plant`."""
    shutil.copytree(LEGACY / run, dest)
    data = json.loads((dest / "run.json").read_text())
    target = data["trials"][0]
    for key in plant[:-1]:
        target = target[key]
    target[plant[-1]] = value
    (dest / "run.json").write_text(json.dumps(data, indent=2))  # json writes inf as Infinity, as a forger would
    return dest / "run.json"


def _tree(root: Path) -> set[Path]:
    return {p.relative_to(root) for p in root.rglob("*")} if root.exists() else set()


def _rows(db: Path) -> list[tuple[object, ...]]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute("SELECT slot, attempt, run_id FROM trial_attempts ORDER BY ALL").fetchall()


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_import_runs_refuses_a_hostile_value_and_writes_nothing(tmp_path: Path, case: str) -> None:
    field, plant, value = HOSTILE[case]
    assert _cli(tmp_path, "import-runs", str(LEGACY / GOOD)).exit_code == 0
    db, runs = tmp_path / "results" / "db", tmp_path / "results" / "runs"
    rows, files = _rows(db), _tree(runs)
    source = tmp_path / "source"
    shutil.copytree(LEGACY / GOOD, source / "a-good-run")  # imported before the bad one, were it not refused
    run_json = _hostile_run(source / "z-bad-run", plant, value)

    result = _cli(tmp_path, "import-runs", str(source))
    assert result.exit_code == 2, _said(result)
    assert f"{run_json}: {field}:" in _said(result) and "nothing was imported" in _said(result)
    assert "Traceback" not in _said(result)
    assert _rows(db) == rows and _tree(runs) == files  # the database and the files as they were
    assert not (tmp_path / "x").exists() and not (tmp_path.parent / "x").exists()


def test_import_runs_refuses_a_run_id_that_is_a_path(tmp_path: Path) -> None:
    source = tmp_path / "source"
    run_json = _hostile_run(source / "run", ("task",), "ok-task")
    data = json.loads(run_json.read_text()) | {"runId": "../outside"}
    run_json.write_text(json.dumps(data))
    result = _cli(tmp_path, "import-runs", str(source))
    assert result.exit_code == 2 and f"{run_json}: runId: run_id '../outside' is not a plain name" in _said(result)
    assert not (tmp_path / "results" / "outside").exists() and not (tmp_path / "results" / "runs").exists()


@pytest.mark.parametrize("how", ["linked-file", "linked-directory", "oversized"])
def test_import_runs_refuses_a_memo_that_is_linked_out_or_oversized(tmp_path: Path, how: str) -> None:
    source = tmp_path / "source"
    shutil.copytree(LEGACY / GOOD, source / GOOD)
    memo = next((source / GOOD).glob("trials/*/memo.md"))
    outside = tmp_path / "host-secrets"
    outside.mkdir()
    (outside / "memo.md").write_text("a host file\n")
    if how == "linked-file":
        memo.unlink()
        memo.symlink_to(outside / "memo.md")
        said = f"{memo}: not a regular file"
    elif how == "linked-directory":
        shutil.rmtree(memo.parent)
        memo.parent.symlink_to(outside, target_is_directory=True)
        said = f"{memo}: reached through a link out of {source / GOOD}"
    else:
        memo.write_text("x" * (MAX_TEXT_BYTES + 1))
        said = f"{memo}: larger than {MAX_TEXT_BYTES:,} bytes"
    result = _cli(tmp_path, "import-runs", str(source))
    assert result.exit_code == 2 and said in _said(result), _said(result)
    assert not (tmp_path / "results" / "runs").exists()


def _shard(root: Path, plant: tuple[str, ...] | None = None, value: object = None) -> Path:
    """A shard as `publish` leaves one: runs/<runId>/run.json (here a real run of the earlier harness)."""
    run_id = json.loads((LEGACY / OTHER / "run.json").read_text())["runId"]
    if plant is None:
        shutil.copytree(LEGACY / OTHER, root / "runs" / run_id)
        data = json.loads((root / "runs" / run_id / "run.json").read_text())
        data["trials"] = data["trials"][1:] or data["trials"]  # another trial than the hostile shard's
        (root / "runs" / run_id / "run.json").write_text(json.dumps(data))
        return root
    _hostile_run(root / "runs" / run_id, plant, value)
    return root


@pytest.mark.parametrize("case", ["huge-integer", "task-path", "infinity"])
def test_merge_shards_refuses_a_hostile_value_before_writing_a_trial(tmp_path: Path, case: str) -> None:
    field, plant, value = HOSTILE[case]
    healthy, bad = _shard(tmp_path / "shard-a"), _shard(tmp_path / "shard-b", plant, value)
    result = _cli(tmp_path, "merge-shards", str(healthy), str(bad))
    assert result.exit_code == 2, _said(result)
    run_json = next(bad.glob("runs/*/run.json"))
    assert f"{run_json}: {field}:" in _said(result) and "nothing was merged" in _said(result)
    assert _tree(tmp_path / "results" / "runs") == set()  # not one trial directory, not the healthy shard's
    assert not (tmp_path / "results" / "db").exists()


def _qa_file(path: Path, pairs: int, padding: int = 0) -> Path:
    body = "".join(f"<qa_pair><question>Question {n}?{' ' * padding}</question><answer>{n}</answer></qa_pair>\n"
                   for n in range(pairs))
    path.write_text(f"<evaluation>\n{body}</evaluation>\n")
    return path


@pytest.mark.parametrize(("pairs", "padding", "said"), [
    (MAX_QA_PAIRS + 1, 0, f"{MAX_QA_PAIRS + 1:,} <qa_pair>s, more than {MAX_QA_PAIRS}"),
    (40, MAX_QA_BYTES // 40, f"larger than {MAX_QA_BYTES:,} bytes"),
])
def test_import_qa_over_the_cap_writes_no_case(tmp_path: Path, pairs: int, padding: int, said: str) -> None:
    qa = _qa_file(tmp_path / "qa.xml", pairs, padding)
    out = tmp_path / "cases"
    result = _cli(tmp_path, "import-qa", str(qa), "--prefix", "flood", "--server-from", QA_SERVER_FROM,
                  "--out", str(out))
    assert result.exit_code == 2 and f"{qa}" in _said(result) and said in _said(result), _said(result)
    assert not out.exists()
    # Under the caps the same shape of file imports: the caps stop floods, not QA files.
    fine = _cli(tmp_path, "import-qa", str(_qa_file(tmp_path / "ok.xml", 3)), "--prefix", "fine",
                "--server-from", QA_SERVER_FROM, "--out", str(out))
    assert fine.exit_code == 0 and len(list(out.iterdir())) == 3, _said(fine)


@pytest.fixture(scope="module")
def eval_cli(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    pycache = tmp_path_factory.getbasetemp() / "pycache"

    def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "mcp_evals_pipeline.cli", *args], cwd=REPO,
                              env=cli_env(tmp_path, pycache), capture_output=True, text=True, timeout=300)

    return run


@pytest.mark.parametrize(("args", "said"), [
    (("--batch-id", "../../etc"), "batch id '../../etc' is not a plain name"),
    (("--batch-id", "x" * 300), "is longer than 200 characters"),
    (("--task", "../tasks/x"), "task id '../tasks/x' is not a plain name"),
    (("--task", "py-v4-01-basic-tool-servr"), "no such task; did you mean py-v4-01-basic-tool-server?"),
    (("--batch-date", "2026-02-30"), "'2026-02-30' is not a batch date"),
    (("--condition", "skill+cloud"), "unknown condition"),
    (("--agent", "nope"), "unknown agent runner 'nope'"),
])
def test_eval_refuses_each_bad_argument_before_creating_the_instance(eval_cli, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                                     args: tuple[str, ...], said: str) -> None:
    base = {"--task": "py-v4-01-basic-tool-server", "--agent": "replay"}
    given = dict(zip(args[::2], args[1::2], strict=True))
    argv = [item for key, value in (base | given).items() for item in (key, value)]
    done = eval_cli(tmp_path, "eval", *argv, "--no-verify", "--skip-judge")
    assert done.returncode == 2 and said in " ".join(done.stderr.split()), done.stderr[-2000:]
    assert not (tmp_path / "dh").exists()  # no DAGSTER_HOME, no dagster.yaml
    assert not (tmp_path / "results").exists()


def test_verify_tasks_names_the_closest_task_and_exits_2(tmp_path: Path) -> None:
    result = _cli(tmp_path, "verify-tasks", "--task", "py-v4-01-basic-tool-servr")
    assert result.exit_code == 2, _said(result)
    assert "no such task; did you mean py-v4-01-basic-tool-server?" in _said(result)
    escaping = _cli(tmp_path, "verify-tasks", "--task", "../../x")
    assert escaping.exit_code == 2 and "task id '../../x' is not a plain name" in _said(escaping)


@pytest.mark.parametrize("where", ["calls", "inputRequiredCalls", "callTimeoutSeconds"])
def test_a_contract_cannot_make_the_grader_wait_unbounded(tmp_path: Path, minimal_contract: dict,
                                                          where: str) -> None:
    contract = json.loads(json.dumps(minimal_contract))
    if where == "calls":
        contract["calls"][0]["timeoutSeconds"] = 100000
        field = "calls[0].timeoutSeconds"
    elif where == "inputRequiredCalls":
        contract["inputRequiredCalls"] = [{"tool": "echo", "rounds": [{"respond": {"action": "accept"}}],
                                           "timeoutSeconds": 100000}]
        field = "inputRequiredCalls[0].timeoutSeconds"
    else:
        contract["callTimeoutSeconds"] = 100000
        field = "callTimeoutSeconds"
    task_dir = write_task(tmp_path, "slow", contract)
    with pytest.raises(TaskLoadError) as refused:
        parse_contract(task_dir / "task.json")
    assert field in str(refused.value) and "300" in str(refused.value), str(refused.value)
    contract_ok = json.loads(json.dumps(contract).replace("100000", "300"))
    (task_dir / "task.json").write_text(json.dumps(contract_ok))
    parse_contract(task_dir / "task.json")  # the bound itself is allowed


def test_import_runs_refuses_an_archive_that_unpacks_past_the_cap(tmp_path: Path, monkeypatch) -> None:
    """A few kilobytes of archive can unpack to gigabytes of zeros: the members are counted before each is written
    (the cap lowered here so the test stays small; the real one is 1 GiB)."""
    import io
    import tarfile

    from mcp_evals_pipeline import cli

    monkeypatch.setattr(cli, "ARCHIVE_CAP_BYTES", 1 << 20)
    archive = tmp_path / "bomb.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name in ("runs/a/run.json", "runs/a/zeros.bin"):
            member = tarfile.TarInfo(name)
            member.size = 2 << 20
            tar.addfile(member, io.BytesIO(bytes(member.size)))
    result = _cli(tmp_path, "import-runs", str(archive))
    assert result.exit_code == 2, _said(result)
    assert f"{archive}: unpacks to more than 1 MiB" in _said(result) and "nothing was imported" in _said(result)
    assert _tree(tmp_path / "results") == set()
