"""The trial asset: one partition = one independent agent attempt in a fresh sandbox, graded and recorded.

Retries (DESIGN "Validity"): an attempt that ends invalid for a reason the harness can fix by trying again
(`TrialRecord.retry_verdict`, contracts/failures.py `RETRYABLE`: every infra reason) asks Dagster
for a retry with capped exponential backoff. The invalid row is already on disk and in DuckDB when the retry is
requested, so nothing is lost: the retry archives it under `previous/attempt-<n>/` and its own attempt becomes
current. A valid pass or fail never retries, and neither does an invalid attempt whose cause a retry cannot
change (`TrialRecord.retryable` false: set where the failure arises, e.g. a missing key or session, a refused
request, a missing skill, a contract the grader cannot check). After the
last retry the asset materializes the invalid attempt like any other (outcome `invalid`, retries_exhausted).
A record that was written to disk but could not be indexed (the database stayed locked, a read-only file) is
retried by indexing it: the retry reads the trial.json already on disk and writes its row, with no new sandbox,
agent or grading (a live agent is paid for once). Only a retry does that; a new materialization is a new attempt,
whose own write indexes every earlier attempt of its slot from the files, a lost one included.
"""

import dagster as dg
from pydantic import Field, field_validator

from mcp_evals_pipeline.agents.registry import DEFAULT_AGENT, agent_entry, agents_help
from mcp_evals_pipeline.defs.partitions import trial_partitions
from mcp_evals_pipeline.defs.resources import EvalStore
from mcp_evals_pipeline.defs.trials.outcome import (
    OUTCOME_TAG,
    checks_table,
    file_paths,
    outcome_check,
    outcome_check_spec,
    outcome_of,
)
from mcp_evals_pipeline.models import agent_label
from mcp_evals_pipeline.sandbox.choice import choose_backend
from mcp_evals_pipeline.store import slot_of
from mcp_evals_pipeline.trial_options import TrialOptions
from mcp_evals_pipeline.trials import (
    RecordNotIndexed,
    TrialSpec,
    parse_trial_key,
    reindex_recorded,
    run_trial,
    trial_dir_for,
)


class TrialConfig(dg.Config, TrialOptions):
    """The trial's options (trial_options.py) as Dagster run config, and how Dagster retries it."""

    agent: str = Field(default=DEFAULT_AGENT, description=f"The agent runner: {agents_help()}")
    options: dict[str, str] = Field(default_factory=dict,  # Dagster config values are strings
                                    description="Runner options, e.g. `session=<file>` (replay), `max_retries=2`")
    base_url: str | None = Field(default=None, description="OpenAI-compatible endpoint of the openai agent")
    max_retries: int = Field(default=2, ge=0, description="Dagster retries of an attempt invalid for infra")
    retry_backoff_s: float = Field(default=30.0, ge=0, description="Wait before the first retry; doubles")
    retry_backoff_max_s: float = Field(default=600.0, ge=0, description="Cap of one wait between retries")

    @field_validator("agent")
    @classmethod
    def _registered(cls, agent: str) -> str:
        agent_entry(agent)  # UnknownRunner naming the registered agents: the run fails before any work
        return agent

    def runner_options(self) -> dict[str, str]:
        return {**self.options, **({"base_url": self.base_url} if self.base_url else {})}

    def backoff_s(self, retry_number: int) -> float:
        """Wait before retry `retry_number + 1` (retry_number: retries already made)."""
        return min(self.retry_backoff_s * 2**retry_number, self.retry_backoff_max_s)


@dg.asset(
    partitions_def=trial_partitions,
    deps=["task_catalog"],
    pool="sandbox",
    check_specs=[outcome_check_spec],
    group_name="trials",
    kinds={"python", "duckdb"},
    description=(
        "One trial: prepare a fresh sandbox (starter/scaffold/skill), run the agent, capture transcript.jsonl and "
        "TrialPerf, grade with the functional grader, write `eval_results/runs/<runId>/trials/<key>/` and the row "
        "in DuckDB. Infra failures become valid=false rows; a retryable one is retried with backoff (each retry "
        "a new attempt, the newest current); re-materializing adds an attempt and makes it current."
    ),
)
def trial(context: dg.AssetExecutionContext, config: TrialConfig, eval_store: EvalStore) -> dg.MaterializeResult:
    key = context.partition_key
    assert isinstance(key, dg.MultiPartitionKey)
    batch_date, trial_name = key.keys_by_dimension["batch_date"], key.keys_by_dimension["trial"]
    task_id, condition, n = parse_trial_key(trial_name)
    retry_number = context.retry_number
    retries_left = retry_number < config.max_retries
    spec = TrialSpec(task_id=task_id, condition=condition, trial=n, batch_date=batch_date,
                     **{**config.trial_options(), "options": config.runner_options()})
    store, results_root = eval_store.store(), eval_store.runs()
    try:
        # A retry after RecordNotIndexed: the attempt is on disk, only its row is missing. Index it, run nothing.
        record = reindex_recorded(spec, store=store, results_root=results_root) if retry_number else None
        if record is not None:
            context.log.info(f"{trial_name}: attempt {record.attempt} re-indexed from its trial.json "
                             "(no new agent run)")
        else:
            box = choose_backend(spec.agent, spec.sandbox)  # what run_trial will open: said on every run
            (context.log.warning if box.unboxed else context.log.info)(box.describe())
            record = run_trial(spec, store=store, results_root=results_root)
    except RecordNotIndexed as exc:
        # The attempt is on disk; only its row is missing. The retry indexes it from the files.
        if not retries_left:
            raise
        wait = config.backoff_s(retry_number)
        context.log.warning(f"{trial_name}: {exc}; retry {retry_number + 1}/{config.max_retries} in {wait:g}s")
        raise dg.RetryRequested(max_retries=config.max_retries, seconds_to_wait=wait) from exc
    outcome = outcome_of(record)
    context.log.info(f"{trial_name} on {batch_date}: {outcome} {record.grade.failure_code or ''} "
                     f"(attempt {record.attempt}, dagster retry {retry_number})")
    retry, why = record.retry_verdict()
    if retry and retries_left:
        wait = config.backoff_s(retry_number)
        context.log.warning(f"{trial_name}: attempt {record.attempt} invalid ({why}): recorded; "
                            f"retry {retry_number + 1}/{config.max_retries} in {wait:g}s")
        raise dg.RetryRequested(max_retries=config.max_retries, seconds_to_wait=wait)
    first = record.grade.first_failure
    return dg.MaterializeResult(tags={OUTCOME_TAG: outcome}, check_results=[outcome_check(record)], metadata={
        "outcome": outcome,
        "passed": int(record.grade.contract_pass),
        "valid": record.valid,
        "failure_code": record.grade.failure_code or "",
        # What the agent's server answered, quoted: plain text, never markdown (reporting/markdown.py).
        "failing_check": dg.MetadataValue.text(f"{first.id}: {first.detail}" if first else ""),
        "run_id": record.run_id or "",
        "attempt": record.attempt,
        "dagster_retries": retry_number,
        "retry": dg.MetadataValue.text("" if record.valid else
                                       ("retries exhausted: " if retry else "not retried: ") + why),
        "slot": slot_of(record),
        "agent": agent_label(record.agent_runner, record.agent_model),
        "sdk_path": record.grade.sdk_path,
        "duration_ms": record.perf.duration_ms or 0,
        "grader_version": record.grader_version or "",
        "isolation": record.isolation or f"{record.sandbox or '?'}: no box was made",
        "checks": checks_table(record),
        **file_paths(record, trial_dir_for(spec, results_root)),
    })
