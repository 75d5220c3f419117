"""What `eval --resume` counts as finished: the slot's current attempt on disk, valid, for the same spec."""

from __future__ import annotations

from pathlib import Path

from mcp_evals_pipeline.store import TrialStore
from mcp_evals_pipeline.trials import TrialSpec, current_record, finished_for, run_trial
from mcp_evals_pipeline.versions import GRADER_VERSION

TASK = "py-v4-01-basic-tool-server"


def test_only_a_valid_attempt_of_the_same_spec_counts_as_finished(tmp_path: Path) -> None:
    spec = TrialSpec(task_id=TASK, condition="noskill+blank", trial=2, batch_date="2026-11-25", agent="replay",
                     batch_id="resume")
    runs = tmp_path / "runs"
    assert finished_for(spec, current_record(spec, runs)) is None  # nothing on disk yet
    record = run_trial(spec, store=TrialStore(tmp_path / "evals.duckdb"), results_root=runs)
    assert record.valid and record.grade.contract_pass
    on_disk = current_record(spec, runs)
    assert on_disk == record
    assert finished_for(spec, on_disk) == "attempt 1 (pass)"
    # Anything that changes what a new attempt would measure makes the trial run again.
    for changed in ({"valid": False, "invalid_reason": "infra.agent"}, {"prompt_hash": "0000"},
                    {"grader_version": GRADER_VERSION + "-old"}, {"agent_runner": "openai"},
                    {"run_id": "resume--replay--other-model"}, {"reasoning_effort": "high"},
                    {"condition": "skill+blank"}):
        assert finished_for(spec, on_disk.model_copy(update=changed)) is None, changed
    other_batch = TrialSpec(**{**spec.__dict__, "batch_id": "another"})
    assert current_record(other_batch, runs) is None
    (runs / record.run_id / "trials" / spec.key / "trial.json").write_text("{broken")
    assert current_record(spec, runs) is None  # unreadable: it runs again
