"""TrialGrade: what the functional grader says about one workspace (a superset of the seed's record)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from mcp_evals_pipeline.contracts.failures import Infra, is_infra
from mcp_evals_pipeline.contracts.ladder import STAGES, stage_of_check_id
from mcp_evals_pipeline.redaction import redact, secret_values
from mcp_evals_pipeline.versions import GRADER_VERSION

SdkPath = Literal["mcp-use", "official-sdk", "fastmcp", "hand-rolled", "unknown"]

# The ladder (contracts/ladder.py): a check belongs to exactly one stage; failureCode is "contract.<stage>" of the first
# failing check.
__all__ = ["STAGES", "Check", "RecordModel", "SdkPath", "TrialGrade", "stage_of_check_id"]


class RecordModel(BaseModel):
    model_config = ConfigDict(populate_by_name=True, alias_generator=to_camel, serialize_by_alias=True)


class Check(RecordModel):
    id: str
    passed: bool = Field(alias="pass")
    required: bool = True
    detail: str | None = None
    stage: str = ""
    # The task's requirement ids this check tests (task.json `requirements`); empty on older records.
    requirements: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _derive_stage(self) -> Check:
        if not self.stage:
            self.stage = stage_of_check_id(self.id)
        return self


class TrialGrade(RecordModel):
    contract_pass: bool
    checks: list[Check]
    # "contract.<stage>" of the first failing check, "infra.<what>" when the grader could not judge, None on pass
    failure_code: str | None
    sdk_path: SdkPath = "unknown"
    scored_for_pass_rate: bool = True
    grader_version: str | None = None  # None only on imported records, whose version is in their run manifest
    # Superset fields: what the handshake saw, the SDK that got installed, where the time went, what the server said.
    sdk_version: str | None = None
    sdk_package: str | None = None  # the package whose installed version sdk_version is (e.g. "mcp-use", "mcp")
    protocol_version: str | None = None
    server_name: str | None = None
    server_version: str | None = None
    stage_ms: dict[str, float] = Field(default_factory=dict)
    # What each step that ran agent-written code ran in (install, typecheck, build, start -> the box).
    isolation: dict[str, str] = Field(default_factory=dict)
    server_output: str | None = None
    error: str | None = None  # infra detail (with failure_code "infra.*"), e.g. a grader crash
    # An infra grade that another attempt would get again (the contract declares what this grader cannot check).
    # Carried into TrialRecord.retryable; not part of the grade's own file format.
    permanent: bool = Field(default=False, exclude=True)

    @model_validator(mode="after")
    def _redact(self) -> TrialGrade:
        """Every word of a grade passes one redaction step (redaction.py): no secret of the harness in a record."""
        secrets = secret_values()
        if secrets:
            for check in self.checks:
                check.detail = redact(check.detail, secrets)
            self.server_output = redact(self.server_output, secrets)
            self.error = redact(self.error, secrets)
        return self

    @classmethod
    def infra(cls, code: Infra, error: str, *, sdk_path: SdkPath = "unknown", scored: bool = True,
              permanent: bool = False) -> TrialGrade:
        """The grade of a trial nothing could be judged on (the one constructor of an infra grade)."""
        return cls(contract_pass=False, checks=[], failure_code=code, sdk_path=sdk_path, scored_for_pass_rate=scored,
                   grader_version=GRADER_VERSION, error=error, permanent=permanent)

    @property
    def valid(self) -> bool:
        """An infra failure says nothing about the SDK: it leaves every denominator."""
        return not is_infra(self.failure_code)

    @property
    def first_failure(self) -> Check | None:
        return next((c for c in self.checks if c.required and not c.passed), None)
