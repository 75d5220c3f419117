"""The command line guides (issue 25): a misspelled id names the nearest ones, not every id there is; an empty
selection is exit 2 with its reason; `batches` and `runs` list what the store holds (imported batches marked, their
ids said to be run numbers); `compare` names what a side lacks instead of calling it fixed.

Each failed before: `eval --task` named one "closest" task however unlike, `--suite`, `--condition` and `--agent`
listed every name and none nearest, `trends --suite mcp-pythn` printed an empty table with exit 0, `regrade --task`
with a typo marked nothing and exited 0, there was no `batches` or `runs`, `compare` of a date named no imported
batch, and a batch with usage trials against one without reported `fixed: usage.miss`.

The store is written with the store's own writer (imported and pipeline rows, as `import-runs` and `eval` write
them); the commands are the real CLI, in process (CliRunner, as tests/test_hostile_input.py, whose subprocess
`eval` already proves a refused id leaves nothing behind).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from mcp_evals_pipeline.cli import main
from mcp_evals_pipeline.contracts.grade import TrialGrade
from mcp_evals_pipeline.contracts.records import TrialRecord
from mcp_evals_pipeline.store import TrialStore
from mcp_evals_pipeline.tasks.suites import load_suites

from .test_sql_models import NS, _trial

IMPORTED_A, IMPORTED_B = "37633826101-1", "37941801895-1"  # the earlier harness's batch ids: run ids, not dates
OURS_A, OURS_B = "2026-11-30", "2026-12-02"  # ours: the batch date


def _usage_miss(run: str, batch: str, date: str, task: str, trial: int) -> TrialRecord:
    """A usage trial the marker scored as a miss, as a replay batch records it."""
    grade = TrialGrade.model_validate({"contractPass": False, "checks": [{"id": "outcome", "pass": False}],
                                       "failureCode": "usage.miss", "sdkPath": "unknown", "scoredForPassRate": True})
    record = _trial(run, batch, date, "3.0", task, "bare", trial, "pass", agent="replay")
    return record.model_copy(update={"kind": "usage", "grade": grade, "agent_model": None})


def _store(results: Path) -> Path:
    """Two imported batches (codex, build) and two of ours (replay): A with build and 14 usage misses, B build only."""
    imported = [_trial(f"{task}--noskill+blank--codex--{date}", batch, date, "2.1.0", task, NS, n,
                       "pass" if n < 3 else "fail", check="tools")
                for batch, date in ((IMPORTED_A, "2026-10-07"), (IMPORTED_B, "2026-10-09"))
                for task in ("v5-01-basic-tool-server", "v5-02-stateful-ticket-queue") for n in (1, 2, 3)]
    ours = [_trial(f"{batch}--replay--default", batch, batch, "3.0", task, NS, 1, outcome, check="calls",
                   agent="replay")
            for batch in (OURS_A, OURS_B)
            for task, outcome in (("py-v4-01-basic-tool-server", "pass"), ("py-v4-02-stateful-ticket-queue", "fail"))]
    usage = [_usage_miss(f"{OURS_A}--replay--default", OURS_A, OURS_A, case, 1)
             for case in load_suites()["ops-platform"].tasks[:14]]
    store = TrialStore(results / "evals.duckdb")
    store.record_trials(imported, source="import")
    store.record_trials([r.model_copy(update={"agent_model": None}) for r in ours] + usage)
    # one run directory of ours on disk, for `regrade`
    run_dir = results / "runs" / f"{OURS_B}--replay--default" / "trials" / f"{ours[2].task}--noskill+blank--t1"
    run_dir.mkdir(parents=True)
    (run_dir / "trial.json").write_text(ours[2].model_dump_json(by_alias=True))
    return results


def _cli(tmp_path: Path, *args: str, results: Path | None = None, **env: str) -> Result:
    results = results or tmp_path / "results"
    env = {"MCP_EVALS_RESULTS_DIR": str(results), "MCP_EVALS_DB": str(results / "evals.duckdb"),
           "DAGSTER_HOME": str(tmp_path / "dh"), **env}
    return CliRunner().invoke(main, list(args), env=env, terminal_width=400)


def _said(result: Result) -> str:
    return " ".join((result.stderr + result.stdout).split())


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _store(tmp_path_factory.mktemp("store") / "results")


def test_a_misspelled_id_names_the_nearest_ones_and_nothing_is_written(tmp_path: Path) -> None:
    done = _cli(tmp_path, "eval", "--task", "v4-01-basic-tool-server", "--no-verify", "--skip-judge")
    assert done.exit_code == 2, _said(done)
    assert "no such task; did you mean py-v4-01-basic-tool-server or v5-01-basic-tool-server?" in _said(done)
    assert "usage-qa-01" not in _said(done)  # not every id there is
    task = "py-v4-01-basic-tool-server"
    for args, nearest in [
        (("eval", "--suite", "mcp-pythn", "--no-verify"), "no such suite 'mcp-pythn'; did you mean mcp-python?"),
        (("eval", "--task", task, "--condition", "skil+blank", "--no-verify"),
         "unknown condition 'skil+blank'; did you mean skill+blank?"),
        (("eval", "--task", task, "--agent", "replya", "--no-verify"),
         "unknown agent runner 'replya'; did you mean replay?"),
        (("verify-tasks", "--task", "py-v4-01-basic-tool-servr"), f"no such task; did you mean {task}?"),
        (("export-qa", "--task", "usage-qa-02", "--task", "usage-qa-1", "-o", str(tmp_path / "qa.xml")),
         "no such task; did you mean usage-qa-10 or usage-qa-01?"),
        (("merge-shards", str(tmp_path / "shard"), "--expect-task", "py-v4-01-basic-tool-servr"),
         f"no such task; did you mean {task}?"),
    ]:
        refused = _cli(tmp_path, *args)
        assert refused.exit_code == 2 and nearest in _said(refused), (args, _said(refused))
    nothing_near = _cli(tmp_path, "eval", "--agent", "nope", "--no-verify")  # nothing near: no guess, the list
    assert nothing_near.exit_code == 2 and "did you mean" not in _said(nothing_near)
    assert "unknown agent runner 'nope' (available: claude, codex, openai, replay)" in _said(nothing_near)
    assert not (tmp_path / "dh").exists() and not (tmp_path / "results").exists() and not (tmp_path / "qa.xml").exists()


def test_an_empty_selection_is_exit_2_with_its_reason(filled: Path, tmp_path: Path) -> None:
    typo = _cli(tmp_path, "trends", "--suite", "mcp-pythn", results=filled)
    assert typo.exit_code == 2, _said(typo)
    assert "--suite mcp-pythn: no build trials of it in" in _said(typo)
    assert "did you mean mcp-python? (the build trends hold: mcp-python, mcp-use)" in _said(typo)
    usage = _cli(tmp_path, "trends", "--suite", "ops-platform", results=filled)  # a usage suite: said where it is
    assert usage.exit_code == 2 and "did you mean" not in _said(usage), _said(usage)
    assert ("its 14 usage trials have trends of their own: SELECT * FROM usage_trends WHERE suite = 'ops-platform'"
            in _said(usage))
    apart = _cli(tmp_path, "trends", "--suite", "mcp-use", "--agent", "replay", results=filled)
    assert apart.exit_code == 2 and "no batch has trials of --suite mcp-use and --agent replay together" in _said(apart)
    assert "`mcp-evals batches` lists what there is" in _said(apart)
    recorded = _cli(tmp_path, "trends", "--suite", "mcp-python", results=filled)  # only replay's: left out, said so
    assert recorded.exit_code == 2, _said(recorded)
    assert ("only recorded sessions have build trends of --suite mcp-python (left out by default, not a model: "
            "--agent replay shows them)") in _said(recorded)
    held = _cli(tmp_path, "trends", "--suite", "mcp-use", results=filled)  # the positive: rows, exit 0
    assert held.exit_code == 0 and IMPORTED_A in held.stdout, _said(held)
    empty = _cli(tmp_path, "trends")  # no store yet: a line saying so, not an error
    assert empty.exit_code == 0 and "no trials in" in _said(empty) and "yet" in _said(empty)
    regrade = _cli(tmp_path, "regrade", "--run", f"{OURS_B}--replay--default", "--task", "py-v4-01-basic-tool-servr",
                   results=filled)
    assert regrade.exit_code == 2, _said(regrade)
    assert (f"--task py-v4-01-basic-tool-servr: run {OURS_B}--replay--default has no trial of it; did you mean "
            "py-v4-01-basic-tool-server?") in _said(regrade)
    for command in ("regrade", "report"):
        no_run = _cli(tmp_path, command, "--run", f"{OURS_B}--replay--defualt", results=filled)
        assert no_run.exit_code == 2 and f"did you mean {OURS_B}--replay--default?" in _said(no_run), _said(no_run)
    tasks = tmp_path / "no-tasks"
    tasks.mkdir()
    none = _cli(tmp_path, "verify-tasks", MCP_EVALS_TASKS_DIR=str(tasks))
    assert none.exit_code == 2 and f"no task to verify under {tasks}" in _said(none), _said(none)


def test_batches_and_runs_list_what_the_store_holds(filled: Path, tmp_path: Path) -> None:
    for command in ("batches", "runs"):
        empty = _cli(tmp_path, command)
        assert empty.exit_code == 0 and "no runs yet in" in _said(empty) and "make run" in _said(empty)
    assert not (tmp_path / "results").exists()  # read-only: an empty store stays absent
    listed = _cli(tmp_path, "batches", results=filled)
    assert listed.exit_code == 0, _said(listed)
    lines = [" ".join(line.replace("│", " ").split()) for line in listed.stdout.splitlines()]
    assert f"{OURS_A} {OURS_A} mcp-python, ops-platform replay (no model) 1 16 1/16 0" in lines, lines
    assert f"{OURS_B} {OURS_B} mcp-python replay (no model) 1 2 1/2 0" in lines
    assert f"{IMPORTED_A} (imported) 2026-10-07 mcp-use codex/gpt-test 2 6 4/6 0" in lines
    order = [next(i for i, line in enumerate(lines) if line.startswith(b)) for b in (OURS_B, OURS_A, IMPORTED_B)]
    assert order == sorted(order)  # newest first
    assert "imported batch ids are the earlier harness's GitHub Actions run ids" in _said(listed)
    runs = _cli(tmp_path, "runs", "--batch", IMPORTED_A, results=filled)
    assert runs.exit_code == 0, _said(runs)
    rows = [" ".join(line.split()) for line in runs.stdout.splitlines() if "--codex--" in line]
    assert rows == [f"codex/gpt-test 2026-10-07 14:00 3 2/3 0 {task}--noskill+blank--codex--2026-10-07"
                    for task in ("v5-01-basic-tool-server", "v5-02-stateful-ticket-queue")], runs.stdout
    by_date = _cli(tmp_path, "runs", "--batch", "2026-10-07", results=filled)
    assert by_date.exit_code == 2, _said(by_date)
    assert (f"no batch '2026-10-07'; the batch(es) of that date: {IMPORTED_A} (imported) (`mcp-evals batches` lists "
            "the 4 there are; imported batch ids are the earlier harness's GitHub Actions run ids") in _said(by_date)


def test_compare_names_what_a_side_lacks_and_the_batches_there_are(filled: Path, tmp_path: Path) -> None:
    done = _cli(tmp_path, "compare", OURS_A, OURS_B, results=filled)
    assert done.exit_code == 0, _said(done)
    text = done.stdout
    assert "usage.miss" not in text.split("## Failure codes")[1]  # not fixed: B never ran a usage case
    assert "- fixed: none" in text and "- new: none" in text
    assert (f"- {OURS_B} has no usage trials under `bare` by replay: {OURS_A} has 14 such task(s), 14 valid "
            "trial(s)") in text
    assert "build `noskill+blank` replay, 2 task(s): 1/2 pass (50%) -> 1/2 pass (50%)" in text
    as_json = _cli(tmp_path, "compare", OURS_A, OURS_B, "--json", results=filled)
    assert '"fixedFailureCodes": {}' in as_json.stdout and '"side": "b"' in as_json.stdout
    by_date = _cli(tmp_path, "compare", "2026-10-07", IMPORTED_B, results=filled)
    assert by_date.exit_code == 2, _said(by_date)
    assert f"no batch '2026-10-07'; the batch(es) of that date: {IMPORTED_A} (imported)" in _said(by_date)
    near = _cli(tmp_path, "compare", IMPORTED_A, "3794180189-1", results=filled)
    assert near.exit_code == 2 and f"did you mean {IMPORTED_B}?" in _said(near), _said(near)
