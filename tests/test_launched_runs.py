"""The instance a CLI batch submits its runs to: runs start without a daemon in the project's own instance, an
instance that queues runs with no daemon to dequeue them is refused before anything runs, and a config an earlier
mcp-evals wrote gets the coordinator it now needs (a user's own config is left alone)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from mcp_evals_pipeline.dagster_instance import COORDINATOR_YAML, DAGSTER_YAML, open_instance
from mcp_evals_pipeline.launched_runs import NoDaemon, coordinator_problem
from mcp_evals_pipeline.pipeline import BatchRequest, run_batch

from .support.instances import batch_instance


def test_a_queueing_instance_without_a_daemon_is_refused_before_any_run() -> None:
    with dg.instance_for_test() as queued:  # Dagster's default: QueuedRunCoordinator
        problem = coordinator_problem(queued)
        assert problem and "dagster-daemon run" in problem and "DefaultRunCoordinator" in problem
        with pytest.raises(NoDaemon, match="no daemon"):
            run_batch(BatchRequest(agent="replay", task_ids=["py-v4-01-basic-tool-server"], verify=False), queued,
                      echo=lambda _: None)
        assert queued.get_runs() == []
    with batch_instance() as direct:
        assert coordinator_problem(direct) is None


def test_the_project_instance_starts_runs_without_a_daemon(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    with open_instance(tmp_path / "fresh") as fresh:
        from dagster._core.launcher import DefaultRunLauncher
        from dagster._core.run_coordinator import DefaultRunCoordinator  # (SyncInMemoryRunCoordinator in 1.13)

        assert isinstance(fresh.run_coordinator, DefaultRunCoordinator) and coordinator_problem(fresh) is None
        assert isinstance(fresh.run_launcher, DefaultRunLauncher)
    older = tmp_path / "older"  # written by an mcp-evals from before batches were submitted
    older.mkdir()
    (older / "dagster.yaml").write_text(DAGSTER_YAML.replace(COORDINATOR_YAML, ""))
    with open_instance(older) as upgraded:
        assert coordinator_problem(upgraded) is None
    assert (older / "dagster.yaml").read_text().count("run_coordinator:") == 1
    own = tmp_path / "own"  # a user's own config: theirs to change
    own.mkdir()
    (own / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    with open_instance(own) as untouched:
        assert coordinator_problem(untouched) is not None
    assert (own / "dagster.yaml").read_text() == "telemetry:\n  enabled: false\n"
