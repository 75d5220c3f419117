"""Trial and run records: a superset of the seed harness's run.json, so its files import unchanged."""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, Field, field_validator

from mcp_evals_pipeline.contracts.failures import RETRYABLE
from mcp_evals_pipeline.contracts.grade import RecordModel, TrialGrade
from mcp_evals_pipeline.redaction import redact


class TrialPerf(RecordModel):
    """Reported beside correctness, never blended with it. None when unknown."""

    duration_ms: int | None = None
    turns: int | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    tool_calls: int | None = None
    cost_usd: float | None = None


class TrialRecord(RecordModel):
    """One trial: exactly one grade, pass, fail or invalid (infra)."""

    task: str
    kind: str = "build"  # the task's kind (mcp_evals_pipeline/kinds): build | usage
    # The seed calls the condition "variant"; both spellings load, "variant" is written for compatibility.
    condition: str = Field(validation_alias=AliasChoices("variant", "condition"), serialization_alias="variant")
    trial: int
    prompt_hash: str | None = None
    agent_runner: str
    agent_model: str | None = None
    reasoning_effort: str | None = None
    sdk_version: str | None = None
    sdk_package: str | None = None  # the package of sdk_version, as installed in the graded workspace
    # The suite the trial ran in (tasks/suites.json) and the latest release of its SDK on the registry at the time.
    suite: str | None = None
    sdk_registry_latest: str | None = None
    grader_version: str | None = None
    batch_id: str | None = None
    batch_date: str | None = None  # YYYY-MM-DD
    run_id: str | None = None
    attempt: int = 1
    sandbox: str | None = None
    isolation: str | None = None  # what the sandbox backend achieved on this host, e.g. "bwrap ro-root pidns ..."
    # A hash of what the condition added to the prompt (a usage task's instructions or docs pack); None for nothing.
    condition_hash: str | None = None
    valid: bool
    invalid_reason: str | None = None
    error: str | None = None
    # Invalid trials only: whether another attempt could plausibly fare differently (a flaky host, endpoint or
    # service) or would fail the same way (a missing key, skill or session; a contract the grader cannot check).
    # None on valid trials and on records that predate the field.
    retryable: bool | None = None
    # `mcp-evals regrade`: the attempt whose agent work this attempt marked again (today's grader, the same work).
    regraded_from: int | None = None
    grade: TrialGrade
    perf: TrialPerf = Field(default_factory=TrialPerf)
    memo_path: str | None = None
    transcript_path: str | None = None
    timestamp: str

    def retry_verdict(self) -> tuple[bool, str]:
        """(retry?, why): only an invalid attempt whose reason a retry can fix (failures.RETRYABLE), and which the
        trial itself did not mark as one that would fail the same way again (`retryable` false)."""
        if self.valid:
            return False, "valid"
        reason = self.invalid_reason or ""
        if reason not in RETRYABLE:
            return False, f"{reason or 'invalid'} is not a retryable reason"
        if self.retryable is False:
            first_line = (self.error or self.grade.error or "").strip().splitlines()[:1]
            return False, f"{reason} would recur: {first_line[0] if first_line else 'permanent'}"
        return True, f"{reason} is retryable"

    @field_validator("error")
    @classmethod
    def _redact_error(cls, value: str | None) -> str | None:
        return redact(value)  # the grade's own texts are redacted by TrialGrade

    @property
    def cell(self) -> str:
        return f"{self.task}--{self.condition}"

    @property
    def trial_name(self) -> str:
        """The trial's directory name and partition key: <task>--<condition>--t<N>."""
        return f"{self.task}--{self.condition}--t{self.trial}"


class RunManifest(RecordModel):
    grader_version: str
    sandbox: str | None = None
    task_prompt_hashes: dict[str, str] = Field(default_factory=dict)
    skill_hash: str | None = None
    conditions: list[str] | None = None
    trials_per_cell: int | None = None
    # suite -> {"sdkPackage", "registryLatest"}: the SDK each suite of the run tested, and its newest release then.
    suites: dict[str, dict[str, str | None]] | None = None
    extra: dict[str, Any] | None = None


class RunFile(RecordModel):
    """eval_results/runs/<runId>/run.json."""

    run_id: str
    batch_id: str
    started_at: str
    agent_runner: str
    agent_model: str | None = None
    judge_model: str | None = None
    manifest: RunManifest
    trials: list[TrialRecord]
