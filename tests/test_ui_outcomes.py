"""What the UI reads of a batch without opening a file (issue 26, item 3): one real replay batch (a failing and a
passing trial of one build task) in a real instance at a tmp DAGSTER_HOME, its materializations and check
evaluations read back from the instance the webserver would read them from."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pytest
import yaml

from mcp_evals_pipeline.dagster_instance import open_instance
from mcp_evals_pipeline.defs.resources import EvalStore
from mcp_evals_pipeline.defs.trials.outcome import OUTCOME_CHECK, OUTCOME_TAG
from mcp_evals_pipeline.pipeline import BatchOutcome, BatchRequest, job, run_batch
from mcp_evals_pipeline.sql_models import wilson_interval

from .conftest import REPO

TASK = "py-v4-01-basic-tool-server"  # replay: t1 plays fail-wrong-sum.jsonl, t2 pass-1.jsonl
DATE = "2026-11-25"
TRIAL = dg.AssetKey("trial")


@dataclass
class Batch:
    instance: dg.DagsterInstance
    store: EvalStore
    outcome: BatchOutcome
    home: Path


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Batch]:
    root = tmp_path_factory.mktemp("ui-outcomes")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MCP_EVALS_RESULTS_DIR", str(root / "results"))
        patch.setenv("DAGSTER_HOME", str(root / "home"))  # open_instance sets it: restored afterwards
        store = EvalStore(database=str(root / "evals.duckdb"), runs_root=str(root / "results" / "runs"))
        with open_instance(root / "home") as instance:
            outcome = run_batch(BatchRequest(agent="replay", task_ids=[TASK], trials=2, batch_date=DATE,
                                             verify=False), instance, echo=lambda _: None, store=store)
            yield Batch(instance, store, outcome, root / "home")


def _latest(instance: dg.DagsterInstance, key: dg.AssetKey, partition: str) -> dg.AssetMaterialization:
    records = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=key, asset_partitions=[partition]),
                                              limit=1).records
    assert records and records[0].asset_materialization is not None, partition
    return records[0].asset_materialization


def _partition(n: int) -> str:
    return f"{DATE}|{TASK}--noskill+blank--t{n}"


def test_trial_materializations_carry_outcome_checks_and_paths(batch: Batch) -> None:
    assert batch.outcome.failed_runs == 0  # a graded fail is a result, not a failed run
    failed, passed = _latest(batch.instance, TRIAL, _partition(1)), _latest(batch.instance, TRIAL, _partition(2))
    assert failed.tags is not None and failed.tags[OUTCOME_TAG] == "fail"
    assert passed.tags is not None and passed.tags[OUTCOME_TAG] == "pass"

    table = failed.metadata["checks"].value
    assert isinstance(table, dg.TableMetadataValue)
    assert [c.name for c in table.schema.columns] == ["id", "pass", "detail"]
    first = table.records[0].data
    # The failing check first, the one the failing_check text names, with its detail
    assert first["pass"] is False and str(failed.metadata["failing_check"].value).startswith(f"{first['id']}: ")
    assert first["detail"] and any(r.data["pass"] for r in table.records)
    assert all(r.data["pass"] for r in passed.metadata["checks"].value.records)

    folder = Path(str(failed.metadata["trial_folder"].value))
    assert folder == Path(batch.store.runs_root) / batch.outcome.run_id / "trials" / f"{TASK}--noskill+blank--t1"
    assert (folder / "trial.json").is_file()
    assert Path(str(failed.metadata["transcript"].value)) == folder / "transcript.jsonl"
    assert Path(str(failed.metadata["memo"].value)) == folder / "memo.md" and (folder / "memo.md").is_file()


def test_a_failed_trial_partition_shows_its_outcome_check_failed(batch: Batch) -> None:
    """What the check's partition view draws (AssetCheckPartitionStatuses): the latest execution per partition."""
    check = dg.AssetCheckKey(TRIAL, OUTCOME_CHECK)
    infos = {i.partition_key: i for i in batch.instance.event_log_storage.get_asset_check_partition_info([check])}
    assert {p: i.latest_execution_status.value for p, i in infos.items()} == {
        _partition(1): "FAILED", _partition(2): "SUCCEEDED"}
    assert all(i.is_current for i in infos.values())  # each judges its partition's latest materialization


def test_the_scorecard_carries_rates_with_intervals_and_the_report(batch: Batch) -> None:
    meta = _latest(batch.instance, dg.AssetKey("batch_scorecard"), DATE).metadata
    rows = [r.data for r in meta["pass_rates"].value.records]
    with batch.store.store().connect() as con:
        low, high = wilson_interval(con, 1, 2)
    assert rows == [{"run": batch.outcome.run_id, "kind": "build", "suite": "mcp-python", "condition": "noskill+blank",
                     "passed": 1, "valid_scored": 2, "invalid": 0, "pass_rate": 0.5,
                     "wilson_95": f"[{low:.3f}, {high:.3f}]"}]
    report = Path(batch.store.runs_root) / batch.outcome.run_id / "report.md"
    assert meta[f"report: {batch.outcome.run_id}"].value == report.read_text()


def test_materializing_an_unchanged_catalog_again_leaves_the_trials_synced(batch: Batch) -> None:
    """"Unsynced" in the UI is StaleStatus.STALE from the resolver the webserver uses."""
    from dagster._core.definitions.data_version import CachingStaleStatusResolver, StaleStatus
    from dagster._core.loader import LoadingContextForTest

    from mcp_evals_pipeline.definitions import defs

    def statuses() -> list[StaleStatus]:
        resolver = CachingStaleStatusResolver(batch.instance, defs.resolve_asset_graph(),
                                              LoadingContextForTest(batch.instance))
        return [resolver.get_status(TRIAL, _partition(n)) for n in (1, 2)]

    assert statuses() == [StaleStatus.FRESH] * 2
    assert job("catalog_job").execute_in_process(instance=batch.instance).success
    assert statuses() == [StaleStatus.FRESH] * 2
    # The negative: a catalog materialization without a data version (what every one was before) is a new version
    # by its event alone, and the trials read from the one before it are Unsynced
    batch.instance.report_runless_asset_event(dg.AssetMaterialization("task_catalog"))
    assert statuses() == [StaleStatus.STALE] * 2


def test_the_first_visit_modal_is_off(batch: Batch) -> None:
    assert batch.instance.nux_enabled is False  # the instance the CLI writes
    assert yaml.safe_load((REPO / "deploy" / "dagster.yaml").read_text())["nux"] == {"enabled": False}


def test_imported_batches_get_their_scorecards_materialized_at_import(legacy_runs: Path, tmp_path: Path) -> None:
    """Two earlier-harness runs on two batch days, imported by the real CLI: each date's scorecard partition is
    materialized (no Dagster run will ever write it), with the imported run's rate and interval; a batch day on
    which nothing ran stays missing."""
    source = tmp_path / "source"
    picked = ["v2-01-basic-tool-server--noskill+blank--codex--2026-08-03T22-44-20",
              "v2-01-basic-tool-server--noskill+blank--codex--2026-08-05T14-50-14"]
    for name in picked:
        shutil.copytree(legacy_runs / name, source / name)
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "home"), "MCP_EVALS_RESULTS_DIR": str(tmp_path / "results")}
    env.pop("MCP_EVALS_DB", None)
    done = subprocess.run([str(Path(sys.executable).parent / "mcp-evals"), "import-runs", str(source)], env=env,
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "the scorecards of 2 imported batch date(s) are materialized" in done.stdout
    with dg.DagsterInstance.from_config(str(tmp_path / "home")) as instance:
        for date, run in zip(["2026-08-03", "2026-08-05"], picked, strict=True):
            meta = _latest(instance, dg.AssetKey("batch_scorecard"), date).metadata
            assert meta["source"].value == "import" and meta["runs"].value == 1
            (row,) = [r.data for r in meta["pass_rates"].value.records]
            assert row["run"] == run and row["wilson_95"].startswith("[")
            legacy_report = tmp_path / "results" / "runs" / run / "report.legacy.md"  # the harness's own, copied
            if date == "2026-08-03":
                assert meta[f"report: {run}"].value == legacy_report.read_text()
            else:  # this run came without one
                assert not legacy_report.exists() and f"report: {run}" not in meta
        assert not instance.fetch_materializations(dg.AssetRecordsFilter(
            asset_key=dg.AssetKey("batch_scorecard"), asset_partitions=["2026-08-07"]), limit=1).records
