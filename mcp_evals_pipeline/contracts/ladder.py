"""The ladder: every stage of the functional grader, core or opt-in, in the one order they run.

Each stage is registered here once with its position (its place in LADDER), what it checks, the check-id prefixes
its checks carry and, for an opt-in stage, the contract feature that turns it on. Everything else derives from
this: STAGES (the order, and so the failure codes `contract.<stage>` a negative may declare), the stage of a check
id on records that carry none, the grading plan (grader/functional.py asks each stage for its steps in this order)
and the stage table in docs/task-authoring.md (tests/test_grader.py checks it against `markdown_table()`).
Imports nothing of the grader, so contracts and records can use it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Stage:
    name: str
    checks: str  # what it checks, one sentence (the docs' table)
    feature: str | None = None  # the contract feature (TaskContract.declared_features) that opts in; None: core
    prefixes: tuple[str, ...] = ()  # check-id prefixes (before ":") besides the stage's own name

    @property
    def failure_code(self) -> str:
        return f"contract.{self.name}"


LADDER: tuple[Stage, ...] = (
    Stage("install", "the declared dependencies install (uv / npm, in an install box)"),
    Stage("typecheck", "every source compiles (Python byte-compiles; TypeScript passes tsc --noEmit)"),
    Stage("imports", "source-imports tasks: the required modules are imported"),
    Stage("source", "requiredSourcePatterns match some source file"),
    Stage("entry", "the first existing entryCandidates file"),
    Stage("build", "buildCommand exits 0 (in a box without network)"),
    Stage("start", "the server listens on PORT within startTimeoutSeconds (in the server box)"),
    Stage("oauth", "401 + challenge naming resource metadata on every refusal path; any valid token works",
          feature="oauth"),
    Stage("handshake", "a real initialize at /mcp"),
    Stage("tools", "expectedTools listed, requiredProps required, propTypes declared"),
    Stage("resources", "expectedResources / templates listed; resourceReads", prefixes=("resource-read",)),
    Stage("views", "each view binding: _meta.ui.resourceUri, the ui:// resource listed and read", feature="views",
          prefixes=("view",)),
    Stage("calls", "the calls in order on one session, with their reads, tool forms and invariants",
          prefixes=("call", "form", "invariant", "post-call-resource-read")),
    Stage("input_required", "multi-round input_required calls driven as a real client", feature="input_required",
          prefixes=("input-required",)),
    Stage("upstream", "the expected requests reached the upstream fake (method, path, query, body)",
          feature="upstream"),
)

STAGES: tuple[str, ...] = tuple(s.name for s in LADDER)
BY_NAME: dict[str, Stage] = {s.name: s for s in LADDER}
_BY_PREFIX: dict[str, str] = {p: s.name for s in LADDER for p in (s.name, *s.prefixes)}


def stage_of_check_id(check_id: str) -> str:
    """The stage a check belongs to, from its id (records of the earlier harness carry no stage). Reads before the
    calls are `resource-read:...` (stage resources), reads inside them are in the calls stage and say so."""
    prefix = check_id.split(":", 1)[0]
    return _BY_PREFIX.get(prefix, prefix)


def markdown_table() -> str:
    rows = ["| # | stage | opt-in | checks | failure code |", "|---|---|---|---|---|"]
    rows += [f"| {i} | `{s.name}` | {f'`{s.feature}`' if s.feature else ''} | {s.checks} | `{s.failure_code}` |"
             for i, s in enumerate(LADDER, start=1)]
    return "\n".join(rows)
