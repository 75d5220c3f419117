"""The Dagster pipeline really materialized in a temporary instance: trial partitions, SQL models, scorecard,
asset checks, schedules and rebuild-db."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import dagster as dg
import pytest

from mcp_evals_pipeline.conditions import BUILD_CONDITIONS, USAGE_CONDITIONS
from mcp_evals_pipeline.definitions import defs
from mcp_evals_pipeline.defs.models.assets import sql_models
from mcp_evals_pipeline.defs.models.checks import pass_rate_above_floor
from mcp_evals_pipeline.defs.partitions import batch_date_partitions, multi_key, register_trial_keys, trial_partitions
from mcp_evals_pipeline.defs.reports.assets import batch_scorecard, weekly_synthesis
from mcp_evals_pipeline.defs.resources import EvalStore
from mcp_evals_pipeline.defs.tasks.assets import task_catalog
from mcp_evals_pipeline.defs.trials.assets import trial
from mcp_evals_pipeline.defs.trials.checks import trial_rows_are_current
from mcp_evals_pipeline.defs.trials.schedules import baseline_schedule
from mcp_evals_pipeline.runs import rebuild_database
from mcp_evals_pipeline.store import TrialStore
from mcp_evals_pipeline.tasks.catalog import discover_tasks
from mcp_evals_pipeline.tasks.suites import get_suite
from mcp_evals_pipeline.trial_dir import read_trial_records

TASK = "py-v4-01-basic-tool-server"
DATE = "2026-11-25"  # a past batch date: the partition exists whatever the clock says


@pytest.fixture
def store(tmp_path: Path) -> EvalStore:
    return EvalStore(database=str(tmp_path / "evals.duckdb"), runs_root=str(tmp_path / "runs"))


def _trial(instance: dg.DagsterInstance, store: EvalStore, key: str) -> dg.ExecuteInProcessResult:
    register_trial_keys(instance, [key])
    return dg.materialize([trial, trial_rows_are_current], partition_key=multi_key(DATE, key), instance=instance,
                          resources={"eval_store": store}, run_config={"ops": {"trial": {"config": {
                              "agent": "replay", "skip_judge": True}}}})


def test_partitions_follow_the_design() -> None:
    """The trial dimension holds what the catalog defines (registered when task_catalog materializes): each task
    under each condition its kind runs, t1..t3; nothing else until a batch asks for it."""
    tasks = discover_tasks()[0]
    with dg.instance_for_test() as instance:
        assert dg.materialize([task_catalog], instance=instance).success
        keys = [str(k) for k in trial_partitions.get_partition_keys(
            current_time=dt.datetime(2026, 12, 1, tzinfo=dt.UTC), dynamic_partitions_store=instance)]
        trial_keys = instance.get_dynamic_partitions("trial")
        assert register_trial_keys(instance, [f"{TASK}--noskill+blank--t5"]) == [f"{TASK}--noskill+blank--t5"]
        assert register_trial_keys(instance, trial_keys) == []  # registering is idempotent
    assert f"{DATE}|{TASK}--noskill+blank--t1" in keys
    assert {k.rsplit("--", 1)[1] for k in trial_keys} == {"t1", "t2", "t3"}
    conditions = {kind: {k.split("--")[1] for k in trial_keys if k.split("--")[0] in {t.id for t in tasks
                                                                                       if t.kind == kind}}
                  for kind in ("build", "usage")}
    assert conditions == {"build": set(BUILD_CONDITIONS), "usage": set(USAGE_CONDITIONS)}
    assert len(trial_keys) == 3 * sum(len(BUILD_CONDITIONS if t.kind == "build" else USAGE_CONDITIONS)
                                      for t in tasks)
    # end_offset=1: a Monday 14:00 tick targets that Monday, not the previous Friday.
    at_tick = batch_date_partitions.get_partition_keys(current_time=dt.datetime(2026, 11, 30, 14, 0, 1, tzinfo=dt.UTC))
    assert at_tick[-1] == "2026-11-30"


def test_trials_models_scorecard_and_checks(store: EvalStore, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    floors = tmp_path / "floors.json"
    floors.write_text(json.dumps({"replay": 0.9}))
    monkeypatch.setenv("MCP_EVALS_FLOORS", str(floors))
    monkeypatch.setenv("MCP_EVALS_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with dg.instance_for_test() as instance:
        for n in (1, 2, 3):
            result = _trial(instance, store, f"{TASK}--noskill+blank--t{n}")
            assert result.success
            checks = {c.check_name: c.passed for c in result.get_asset_check_evaluations()}
            assert checks == {"trial_rows_are_current": True, "trial_outcome": n != 1}  # t1 fails its contract
        # Replay picks sessions in order: t1 replays the failing session, t2 and t3 passing ones.
        outcomes = [row["contract_pass"] for row in store.store().query(
            "SELECT contract_pass FROM trials ORDER BY trial")]
        assert outcomes == [False, True, True]

        rerun = _trial(instance, store, f"{TASK}--noskill+blank--t1")  # a second attempt replaces, never duplicates
        assert {c.check_name: c.passed for c in rerun.get_asset_check_evaluations()}["trial_rows_are_current"]
        counts = store.store().query("SELECT (SELECT count(*) FROM trials) AS current_rows, "
                                     "(SELECT count(*) FROM trial_attempts) AS attempts")
        assert counts == [{"current_rows": 3, "attempts": 4}]

        reports = dg.materialize([sql_models, batch_scorecard, pass_rate_above_floor], partition_key=DATE,
                                 instance=instance, resources={"eval_store": store})
        assert reports.success
        # 2/3 is under the configured 90% floor: a warning, not a failed run.
        (floor_check,) = reports.get_asset_check_evaluations()
        assert not floor_check.passed and floor_check.severity == dg.AssetCheckSeverity.WARN
        assert "below the floor" in floor_check.metadata["violations"].value
        pass_rate = reports.asset_materializations_for_node("sql_models")
        headline = next(m for m in pass_rate if m.asset_key == dg.AssetKey("pass_rate")).metadata
        assert headline["latest_passed"].value == 2 and headline["latest_valid_scored"].value == 3

        # The weekly synthesis without a key: the code-computed figures are written, the model part is skipped.
        synthesis = dg.materialize([weekly_synthesis], partition_key="2026-11-23", instance=instance,
                                   resources={"eval_store": store})
        meta = synthesis.asset_materializations_for_node("weekly_synthesis")[0].metadata
        # Its figures are of real models: the week's replay trials are left out, and it says so.
        assert meta["passed"].value == 0 and meta["valid_scored"].value == 0
        assert "Left out of every figure: replay (no model): 3 trial(s)" in meta["notes"].value
        assert meta["model"].value == "not called: no failing trial in the window's figures"
        assert Path(meta["report"].value).exists()

    run_dir = Path(store.runs_root) / f"{DATE}--replay--default"
    report = (run_dir / "report.md").read_text()
    assert "## Pass rate: 67% (2/3 valid scored trials)" in report
    assert f"| {TASK} | noskill+blank | 2/3 |" in report
    run = json.loads((run_dir / "run.json").read_text())
    assert run["manifest"]["graderVersion"] and len(run["trials"]) == 3
    assert {t["attempt"] for t in run["trials"]} == {1, 2}

    # Files are the source of truth: the database rebuilt from them holds the same attempts.
    rebuilt = tmp_path / "rebuilt.duckdb"
    summary = rebuild_database(Path(store.runs_root), rebuilt)
    assert summary.errors == [] and summary.rows == 4
    columns = "slot, attempt, is_current, contract_pass, failure_code, valid, duration_ms"
    original = store.store().query(f"SELECT {columns} FROM trial_attempts ORDER BY slot, attempt")
    assert TrialStore(rebuilt).query(f"SELECT {columns} FROM trial_attempts ORDER BY slot, attempt") == original


def test_baseline_schedule_requests_the_nine_baseline_tasks_three_times_with_codex() -> None:
    with dg.instance_for_test() as instance:
        context = dg.build_schedule_context(scheduled_execution_time=dt.datetime(2026, 11, 25, 14, tzinfo=dt.UTC),
                                            repository_def=defs.get_repository_def(), instance=instance)
        requests = list(baseline_schedule.evaluate_tick(context).run_requests or [])
    tasks = get_suite("mcp-use").baseline_tasks
    assert len(tasks) == 9 and len(requests) == 27
    assert {str(r.partition_key) for r in requests} == {
        f"{DATE}|{t}--noskill+blank--t{n}" for t in tasks for n in (1, 2, 3)}
    assert all(r.run_config["ops"]["trial"]["config"]["agent"] == "codex" for r in requests)


def test_definitions_carry_groups_kinds_and_descriptions() -> None:
    repo = defs.get_repository_def()
    graph = repo.asset_graph
    kinds = {}
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        assert node.group_name != "default", key
        assert node.description, key
        kinds[key.to_user_string()] = set(node.kinds)
    # What each asset is made of, as the UI shows it: every asset has its kinds, and the sources say which.
    models = {k: v for k, v in kinds.items() if graph.get(dg.AssetKey(k)).group_name == "models"}
    assert len(models) >= 10 and all(v == {"duckdb", "sql"} for v in models.values()), models
    assert {k: v for k, v in kinds.items() if k not in models} == {
        "task_catalog": {"python"}, "trial": {"python", "duckdb"}, "batch_scorecard": {"markdown", "json"},
        "weekly_synthesis": {"openai", "markdown"}, "findings": {"json", "duckdb"}}


def test_one_broken_run_does_not_cost_the_others_their_scorecards(store: EvalStore, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A run of the batch date whose files are corrupt, and a row whose run id would climb out of the results
    root, are reported (metadata `broken_runs`, the log); every other run still gets run.json and report.md."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with dg.instance_for_test() as instance:
        register_trial_keys(instance, [f"{TASK}--noskill+blank--t1"])
        for batch_id in ("0-corrupt", None):  # the corrupt run sorts first: the good one comes after it
            result = dg.materialize([trial], partition_key=multi_key(DATE, f"{TASK}--noskill+blank--t1"),
                                    instance=instance, resources={"eval_store": store},
                                    run_config={"ops": {"trial": {"config": {"agent": "replay", "batch_id": batch_id,
                                                                             "skip_judge": True}}}})
            assert result.success
        runs = Path(store.runs_root)
        (runs / "0-corrupt--replay--default" / "trials" / f"{TASK}--noskill+blank--t1" / "trial.json").write_text(
            "{not json")
        db = store.store()
        (good,) = [r for r in read_trial_records(runs / f"{DATE}--replay--default")]
        db.record_trials([good.model_copy(update={"run_id": "../../etc--replay--default", "batch_id": "escaped"})])
        reports = dg.materialize([sql_models, batch_scorecard], partition_key=DATE, instance=instance,
                                 resources={"eval_store": store})
    assert reports.success
    meta = reports.asset_materializations_for_node("batch_scorecard")[0].metadata
    broken = meta["broken_runs"].value.splitlines()
    assert [line.split(": ")[0] for line in broken] == ["../../etc--replay--default", "0-corrupt--replay--default"]
    assert "not a plain name" in broken[0] and "ValidationError" in broken[1]
    assert meta["runs"].value == 1
    assert "## Pass rate" in (runs / f"{DATE}--replay--default" / "report.md").read_text()
    assert (runs / f"{DATE}--replay--default" / "run.json").exists()
    assert not (runs / "0-corrupt--replay--default" / "report.md").exists()


def test_models_after_a_backfill_index_the_run_and_describe_their_tables(store: EvalStore) -> None:
    """Trials materialized on their own (as a UI backfill does), then only the models: the run gets its run.json
    and `runs` row, and each model asset carries its row count, column schema and owner."""
    with dg.instance_for_test() as instance:
        assert _trial(instance, store, f"{TASK}--noskill+blank--t2").success
        assert store.store().query("SELECT count(*) AS n FROM runs") == [{"n": 0}]
        models = dg.materialize([sql_models], instance=instance, resources={"eval_store": store})
        assert models.success
    run_id = f"{DATE}--replay--default"
    assert store.store().query("SELECT run_id FROM runs") == [{"run_id": run_id}]
    assert (Path(store.runs_root) / run_id / "run.json").is_file()
    meta = next(m for m in models.asset_materializations_for_node("sql_models")
                if m.asset_key == dg.AssetKey("pass_rate")).metadata
    assert meta["dagster/row_count"].value == 2  # the run's '*' row and its one condition
    columns = {c.name: c.type for c in meta["dagster/column_schema"].schema.columns}
    assert columns["pass_rate"] == "DOUBLE" and columns["passed"] == "BIGINT"
    assert all(spec.owners == ["team:evals"] for spec in sql_models.specs)
