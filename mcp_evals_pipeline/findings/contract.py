"""What a finding is: a recurring struggle tied to what code can observe in the trial rows, with a stable id, its
verified evidence, a status per synthesis week decided by code, and the human decisions taken on it."""

from __future__ import annotations

import re
from datetime import date

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mcp_evals_pipeline.findings.statuses import Status
from mcp_evals_pipeline.synthesis.figures import ISSUE_CATEGORIES

FINDING_ID = re.compile(r"F-\d{4,}")
# The synthesis's issue categories, and `server` for usage findings (a tool's name, description or result).
CATEGORIES = (*ISSUE_CATEGORIES, "server")

class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class BuildSignature(_Strict):
    """A build failure code sees: the task, the grader's failure code and the first failing check."""
    task: str
    failure_code: str
    failing_check: str

    @property
    def subject(self) -> str:
        return self.task


class UsageSignature(_Strict):
    """A usage failure code sees: the case and the mark it failed (the marker's failing check, e.g. other-writes)."""
    case: str
    mark: str

    @property
    def subject(self) -> str:
        return self.case


SignatureItem = BuildSignature | UsageSignature


class Signature(_Strict):
    build: list[BuildSignature] = Field(default_factory=list)
    usage: list[UsageSignature] = Field(default_factory=list)

    def items(self) -> list[SignatureItem]:
        return [*self.build, *self.usage]

    def subjects(self) -> set[str]:
        """The tasks and cases the finding is about: whether they ran decides not-observed."""
        return {i.subject for i in self.items()}

    def merged(self, more: list[SignatureItem]) -> Signature:
        build = list(dict.fromkeys([*self.build, *(i for i in more if isinstance(i, BuildSignature))]))
        usage = list(dict.fromkeys([*self.usage, *(i for i in more if isinstance(i, UsageSignature))]))
        return Signature(build=sorted(build, key=str), usage=sorted(usage, key=str))


class Quote(_Strict):
    """A quote code found verbatim in the week's memos, failure details or transcripts, and its trial."""
    text: str = Field(min_length=1)
    trial: str = Field(min_length=1)
    week: date


class WeekStatus(_Strict):
    """One synthesis week's verdict (code's), and the trials that matched the signature that week."""
    week: date  # the window's last day
    status: Status
    matching_trials: list[str] = Field(default_factory=list)  # "<batch> <task>--<condition>--t<N>"
    clean_batches: int = 0  # batches of its tasks after its last sighting in the week (all of them if not seen)


class Close(_Strict):
    """A human decision: kept for good, never deleted (a later one adds, it does not replace)."""
    by: str = Field(min_length=1)
    reason: str = Field(min_length=1)
    at: str = Field(min_length=1)  # ISO timestamp, UTC


class Finding(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    title: str = Field(min_length=1)
    category: str
    signature: Signature
    evidence: list[Quote] = Field(default_factory=list)
    first_seen: date
    last_seen: date
    status: Status
    history: list[WeekStatus] = Field(default_factory=list)
    closes: list[Close] = Field(default_factory=list)

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        if not FINDING_ID.fullmatch(value):
            raise ValueError(f"{value!r} is not a finding id (F- and four or more digits, e.g. F-0001)")
        return value

    @field_validator("category")
    @classmethod
    def _category(cls, value: str) -> str:
        if value not in CATEGORIES:
            raise ValueError(f"{value!r} is not one of {', '.join(CATEGORIES)}")
        return value

    @field_validator("signature")
    @classmethod
    def _signature(cls, value: Signature) -> Signature:
        if not value.items():
            raise ValueError("a finding needs at least one observable signature item")
        return value

    @property
    def closed(self) -> bool:
        return bool(self.closes)


# ---------------------------------------------------------------------------------------------------------------
# What the synthesis model may propose (validated; everything else it writes is ignored)

class ProposedSignature(BaseModel):
    """One item as the model writes it: task + failure_code + failing_check (build) or case + mark (usage)."""
    model_config = ConfigDict(extra="ignore")

    task: str | None = None
    failure_code: str | None = None
    failing_check: str | None = None
    case: str | None = None
    mark: str | None = None

    def item(self) -> SignatureItem | None:
        if self.task and self.failure_code and self.failing_check:
            return BuildSignature(task=self.task, failure_code=self.failure_code, failing_check=self.failing_check)
        if self.case and self.mark:
            return UsageSignature(case=self.case, mark=self.mark)
        return None


class ProposedQuote(BaseModel):
    model_config = ConfigDict(extra="ignore")
    text: str
    trial: str


class Proposal(BaseModel):
    """For one struggle of the week: an existing finding's id or "new". A status, a count or any other field the
    model adds is ignored (extra="ignore"): code decides those."""
    model_config = ConfigDict(extra="ignore")

    struggle: str = ""
    finding: str  # "new" or an id shown to the model
    title: str | None = None
    category: str | None = None
    signature: list[ProposedSignature] = Field(min_length=1)
    quotes: list[ProposedQuote] = Field(default_factory=list)

    @field_validator("finding")
    @classmethod
    def _finding(cls, value: str) -> str:
        value = value.strip()
        if value != "new" and not FINDING_ID.fullmatch(value):
            raise ValueError(f"{value!r} is neither \"new\" nor a finding id")
        return value
