"""The arguments and results of serve's authoring tools: the MCP SDK derives each tool's input and output schema from
these (and from the task contracts they embed: TaskContract, NegativeDeclaration, TrialGrade), so no schema is
written twice."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from mcp_evals_pipeline.contracts.task import TaskContract
from mcp_evals_pipeline.contracts.task_base import ContractModel
from mcp_evals_pipeline.tasks.catalog import NegativeDeclaration

Files = dict[str, str]  # relative path -> text content


class DraftNegative(ContractModel):
    """A known-bad solution: its declaration (negative.json) and its files."""

    declaration: NegativeDeclaration
    files: Files = Field(default_factory=dict)


class DraftContent(ContractModel):
    """A whole draft: a task directory's content (docs/task-authoring.md)."""

    prompt: str = Field(description="prompt.md: what the agent reads; states the contract, never the test")
    contract: TaskContract = Field(description="task.json: the machine-checkable contract (a build task)")
    golden: Files = Field(default_factory=dict, description="golden/: a known-good solution, path -> content")
    alternates: dict[str, Files] = Field(default_factory=dict, description="alternates/<name>/: more solutions "
                                                                           "that must pass")
    negatives: dict[str, DraftNegative] = Field(default_factory=dict, description="negatives/<name>/: known-bad "
                                                "solutions, each failing at its declared failureCode")
    starter: Files = Field(default_factory=dict, description="starter/: copied into the agent's workspace first")


class PatchOp(ContractModel):
    """One edit of a draft. `path` is dotted: `prompt`; `contract.<field>...` (task.json's camelCase names, list
    items by index: `contract.calls.0.args.a`); `negatives.<name>[.<field>]` (a negative's declaration; unset
    `negatives.<name>` drops the negative and its files); `files.<file path>` (the rest taken whole:
    `files.golden/server.py`; set writes it, unset deletes it)."""

    op: Literal["set", "append", "unset"]
    path: str
    value: Any = None


class Change(ContractModel):
    op: str
    path: str
    before: Any = None
    after: Any = None


class DraftView(ContractModel):
    draft_id: str
    prompt: str
    contract: dict[str, Any] = Field(description="task.json as stored")
    negatives: dict[str, dict[str, Any]] = Field(description="each negative's negative.json")
    files: Files = Field(description="every solution file (golden/, alternates/, negatives/, starter/)")
    problems: list[str] = Field(description="what submit_draft would refuse without grading (load errors, "
                                            "authoring rules); the gradings are submit's and run_check's")
    changed: list[Change] = Field(default_factory=list, description="revise_draft: what the patch changed")


class DraftSummary(ContractModel):
    draft_id: str
    title: str | None
    solutions: int
    problems: int


class DraftList(ContractModel):
    drafts: list[DraftSummary]


class Discarded(ContractModel):
    draft_id: str
    discarded: bool


class GradedSolution(ContractModel):
    solution: str
    expected: str
    got: str
    ok: bool
    why: str | None = None


class SubmitOutcome(ContractModel):
    submitted: bool
    task_id: str
    task_dir: str | None = None
    prompt_hash: str | None = None
    reasons: list[str] = Field(default_factory=list, description="every reason the gate refused, all at once")
    graded: list[GradedSolution] = Field(default_factory=list)
