"""The trial asset: one partition = one independent agent attempt in a fresh sandbox, graded and recorded."""


import dagster as dg
from pydantic import Field

from mcp_evals_pipeline.defs.partitions import trial_partitions
from mcp_evals_pipeline.defs.resources import EvalStore
from mcp_evals_pipeline.store import slot_of
from mcp_evals_pipeline.trials import TrialSpec, parse_trial_key, run_trial


class TrialConfig(dg.Config):
    agent: str = Field(default="replay", description="replay | openai | codex | claude")
    model: str | None = Field(default=None, description="Override the agent's pinned model")
    reasoning_effort: str | None = None
    batch_id: str | None = Field(default=None, description="Group id of the batch (default: the batch date)")
    skip_judge: bool = True
    time_budget_s: float = 1200.0


@dg.asset(
    partitions_def=trial_partitions,
    deps=["task_catalog"],
    pool="sandbox",
    group_name="trials",
    kinds={"python", "duckdb"},
    description=(
        "One trial: prepare a fresh sandbox (starter/scaffold/skill), run the agent, capture transcript.jsonl and "
        "TrialPerf, grade with the functional grader, write eval_results/runs/<runId>/trials/<key>/ and the row "
        "in DuckDB. Infra failures become valid=false rows; re-materializing adds an attempt and makes it current."
    ),
)
def trial(context: dg.AssetExecutionContext, config: TrialConfig, eval_store: EvalStore) -> dg.MaterializeResult:
    key = context.partition_key
    assert isinstance(key, dg.MultiPartitionKey)
    batch_date, trial_name = key.keys_by_dimension["batch_date"], key.keys_by_dimension["trial"]
    task_id, condition, n = parse_trial_key(trial_name)
    record = run_trial(
        TrialSpec(task_id=task_id, condition=condition, trial=n, batch_date=batch_date, agent=config.agent,
                  model=config.model, reasoning_effort=config.reasoning_effort, batch_id=config.batch_id,
                  skip_judge=config.skip_judge, time_budget_s=config.time_budget_s),
        store=eval_store.store(), results_root=eval_store.runs(),
    )
    outcome = "pass" if record.grade.contract_pass else ("invalid" if not record.valid else "fail")
    context.log.info(f"{trial_name} on {batch_date}: {outcome} {record.grade.failure_code or ''}")
    first = record.grade.first_failure
    return dg.MaterializeResult(metadata={
        "outcome": outcome,
        "passed": int(record.grade.contract_pass),
        "valid": record.valid,
        "failure_code": record.grade.failure_code or "",
        "failing_check": f"{first.id}: {first.detail}" if first else "",
        "run_id": record.run_id or "",
        "attempt": record.attempt,
        "slot": slot_of(record),
        "agent": f"{record.agent_runner}/{record.agent_model}",
        "sdk_path": record.grade.sdk_path,
        "duration_ms": record.perf.duration_ms or 0,
        "grader_version": record.grader_version or "",
    })
