"""task.json: the machine-checkable contract of a task.

camelCase on disk, like the seed harness; the shapes of the earlier harness's contracts (`entryCandidates`,
`expectedTools[].requiredProps`, `calls[].expect: {type, value}`, `buildCommand`, `postCallResourceReads`) load
unchanged. Unknown fields are rejected, so a typo fails loudly instead of silently dropping a check.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import AliasChoices, Field, field_validator, model_validator

from mcp_evals_pipeline.contracts.input_required import InputRequiredCall
from mcp_evals_pipeline.contracts.oauth import OAuthSpec
from mcp_evals_pipeline.contracts.task_base import (
    MAX_WAIT_SECONDS,
    ContractModel,
    Covers,
    Expectation,
    ExpectationType,
    GapKind,
    JsonType,
    as_list,
)
from mcp_evals_pipeline.contracts.upstream import UpstreamSpec
from mcp_evals_pipeline.contracts.views import ViewBinding, view_bindings

__all__ = ["ContractModel", "Expectation", "ExpectationType", "Invariant", "ResourceRead", "TaskContract", "ToolCall",
           "ToolForm"]


# Ladder stages a requirement may be checked by as a whole (`checkedBy`); everything later in the ladder (a call,
# a read, a view, an input_required call, an upstream request) names its requirements itself.
WHOLE_STAGE_CHECKS: tuple[str, ...] = ("install", "typecheck", "imports", "source", "entry", "build", "start",
                                       "oauth", "handshake", "tools", "resources")


class Requirement(ContractModel):
    """One requirement the prompt states. Every one needs a check (an element naming it, or a `checkedBy` stage)
    and a negative that violates only it (tests/test_requirement_coverage.py)."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$", description="What checks and negatives name it by.")
    text: str = Field(min_length=1, description="The one property it is, in the prompt's terms.")
    kinds: list[GapKind] = Field(default_factory=list, description="The kinds of gap it covers (a lenient "
                                 "implementation's), which the coverage test looks for.")
    checked_by: list[str] = Field(default_factory=list, description="Whole ladder stages that check it (install "
                                  "... resources); a later element (a call, a read) names its requirements itself.")

    @field_validator("checked_by")
    @classmethod
    def _whole_stages(cls, value: list[str]) -> list[str]:
        for stage in value:
            if stage not in WHOLE_STAGE_CHECKS:
                raise ValueError(f"checkedBy {stage!r} is not one of {', '.join(WHOLE_STAGE_CHECKS)} (a call, read "
                                 "or other element names its requirements itself)")
        return value


class ResourceRead(Covers):
    uri: str = Field(description="The resource read.")
    expect: list[Expectation] = Field(default_factory=list, description="What the read's text must hold.")
    mime_type: str | None = Field(default=None, description="The MIME type the content must have.")
    is_error: bool | None = Field(default=None, description="True: the read must fail with a protocol error (e.g. "
                                  "an unknown slug); `expect` then applies to its message.")

    _listify = field_validator("expect", mode="before")(as_list)


class ToolCall(Covers):
    tool: str = Field(description="The tool called (one of expectedTools).")
    args: dict[str, Any] = Field(default_factory=dict, description="The call's arguments.")
    is_error: bool | None = Field(default=None, description="The result's isError flag must equal it (null: not "
                                  "checked).")
    expect: list[Expectation] = Field(default_factory=list, description="What the result must hold.")
    reads_before: list[ResourceRead] = Field(default_factory=list, description="Resource reads on the same session "
                                             "just before the call, so state changes can be asserted.")
    reads_after: list[ResourceRead] = Field(default_factory=list, description="Resource reads on the same session "
                                            "just after the call.")
    timeout_seconds: float | None = Field(default=None, gt=0, le=MAX_WAIT_SECONDS,
                                          description="This call's wait (default: callTimeoutSeconds).")
    view_uri: str | None = Field(default=None, description="Earlier harness: a view binding, graded by the views "
                                 "stage.")
    as_user: str | None = Field(default=None, description="OAuth tasks: made on a session of its own with a token "
                                "minted for this user of the IdP, so an identity answer is checked against more "
                                "than one user.")

    _listify = field_validator("expect", mode="before")(as_list)


class ToolForm(Covers):
    """A rule on every result of one tool: checked after each of the tool's calls in `calls` as a check of its own
    (`form:<tool>:<n>:<k>`: form k on the tool's n-th call), so a rule the prompt states for every result ("the
    text is exactly the sum"; "structured content, if any, is {id, status}") is written once and holds at every
    exchange. `when` limits it to normal results (`ok`), error results (`error`) or neither (`any`)."""

    when: Literal["ok", "error", "any"] = Field(default="any", description="The results it holds for: normal, "
                                                "error or both.")
    expect: list[Expectation] = Field(min_length=1, description="What each such result must hold.")

    _listify = field_validator("expect", mode="before")(as_list)


class InvariantCall(ContractModel):
    tool: str = Field(description="The read-only tool called to observe the state.")
    args: dict[str, Any] = Field(default_factory=dict, description="Its arguments.")


class Invariant(Covers):
    """A read-only call the ladder makes after every call in `calls` of the tools `after` names (state-changing
    ones), its result held to `expect` (`invariant:<i>:after:<call check id>`): an invariant of the state (a
    listing's order, its count) is checked after every operation that could break it, not in one chosen state."""

    after: list[str] = Field(min_length=1, description="The tools after each of whose calls it is checked.")
    call: InvariantCall = Field(description="The read-only call that observes the state.")
    expect: list[Expectation] = Field(min_length=1, description="What that call's result must hold every time.")

    _listify = field_validator("expect", mode="before")(as_list)


class ExpectedTool(Covers):
    name: str = Field(description="The tool's name (compared ignoring case, _ and - unless in exactToolNames).")
    required_props: list[str] = Field(default_factory=list, description="Input properties that must be listed and "
                                      "required in its inputSchema.")
    prop_types: dict[str, JsonType] = Field(default_factory=dict, description="The JSON Schema type each named "
                                            "input property must declare (e.g. {\"a\": \"integer\"}).")
    view_uri: str | None = Field(default=None, description="Earlier harness: a view binding, graded by the views "
                                 "stage.")
    forms: list[ToolForm] = Field(default_factory=list, description="Rules on every result of this tool in calls.")


class ExpectedResource(Covers):
    uri: str = Field(description="A resource that must be listed.")
    name: str | None = Field(default=None, description="Its name, compared when given.")
    mime_type: str | None = Field(default=None, description="Its MIME type, compared when given.")


class ExpectedResourceTemplate(Covers):
    uri_template: str = Field(description="A resource template that must be listed.")
    name: str | None = Field(default=None, description="Its name, compared when given.")
    mime_type: str | None = Field(default=None, description="Its MIME type, compared when given.")


class ImportRequirement(ContractModel):
    source: str


class DeterministicReadiness(ContractModel):
    mode: Literal["source-imports"]
    imports: list[ImportRequirement] = Field(min_length=1)


class TaskContract(ContractModel):
    kind: Literal["build"] = Field(default="build", description="The task kind (mcp_evals_pipeline/kinds): a build "
                                   "task's agent builds a server, graded by the ladder.")
    id: str | None = Field(default=None, description="The task id; when given, it must be the directory's name.")
    title: str = Field(description="One line saying what is built.")
    requirements: list[Requirement] = Field(default_factory=list, description="What the prompt requires, each with "
                                            "an id the checks name (empty only for the earlier harness's contracts).")
    runtime: Literal["python", "node"] | None = Field(default=None, description="The built server's runtime (null: "
                                                      "implied by the entry files).")
    entry_candidates: list[str] = Field(
        min_length=1, validation_alias=AliasChoices("entryCandidates", "entry", "entry_candidates"),
        description="The files the server may start from, in order: the first that exists is the entry.",
    )
    install_command: list[str] | None = Field(
        default=None, validation_alias=AliasChoices("installCommand", "install", "install_command"),
        description="Earlier harness: accepted, not run (the install stage installs the declared dependencies).",
    )
    build_command: list[str] | None = Field(
        default=None, validation_alias=AliasChoices("buildCommand", "build", "build_command"),
        description="Run in a box without network; it must exit 0 (stage build).",
    )
    start_command: list[str] | None = Field(
        default=None, validation_alias=AliasChoices("startCommand", "start", "start_command"),
        description="How the server starts (default: the runtime's, from the entry); it must listen on PORT.",
    )
    exact_tool_names: list[str] = Field(default_factory=list, description="Tools whose names must match exactly "
                                        "(others are compared ignoring case, _ and -).")
    expected_tools: list[ExpectedTool] = Field(default_factory=list, description="The tools that must be listed "
                                               "(stage tools), with their forms.")
    expected_resources: list[ExpectedResource] = Field(
        default_factory=list, validation_alias=AliasChoices("expectedResources", "resources", "expected_resources"),
        description="The resources that must be listed (stage resources).",
    )
    expected_resource_templates: list[ExpectedResourceTemplate] = Field(
        default_factory=list,
        validation_alias=AliasChoices("expectedResourceTemplates", "resourceTemplates", "expected_resource_templates"),
        description="The resource templates that must be listed (stage resources).",
    )
    resource_reads: list[ResourceRead] = Field(default_factory=list, description="Reads before any call (stage "
                                               "resources).")
    calls: list[ToolCall] = Field(default_factory=list, description="The calls, in order, on one session (stage "
                                  "calls).")
    invariants: list[Invariant] = Field(default_factory=list, description="State rules checked after every call of "
                                        "the tools they name.")
    post_call_resource_reads: list[ResourceRead] = Field(default_factory=list, description="Reads after all the "
                                                         "calls.")
    required_source_patterns: list[str] = Field(default_factory=list, description="Regexes some source file must "
                                                "match (stage source).")
    deterministic_readiness: DeterministicReadiness | None = Field(default=None, description="A static "
                                                                   "source-imports task: no server is started.")
    agent_env_keys: list[str] = Field(default_factory=list, description="Environment variables the agent may need "
                                      "for its work, given to it in its workspace.")
    start_timeout_seconds: float = Field(default=20.0, gt=0, le=MAX_WAIT_SECONDS, description="How long the server "
                                         "may take to listen on PORT.")
    call_timeout_seconds: float = Field(default=15.0, gt=0, le=MAX_WAIT_SECONDS, description="How long one call may "
                                        "take.")
    # Opt-in ladder stages (mcp_evals_pipeline/grader/features.py); a grader without one refuses the contract.
    views: list[ViewBinding] = Field(default_factory=list, description="Opt-in stage views: UI resources bound to "
                                     "tools.")
    input_required_calls: list[InputRequiredCall] = Field(default_factory=list, description="Opt-in stage "
                                                          "input_required: multi-round calls.")
    oauth: OAuthSpec | None = Field(default=None, description="Opt-in stage oauth: a local IdP, the refusal paths.")
    upstream: UpstreamSpec | None = Field(default=None, description="Opt-in stage upstream: a recording fake "
                                          "service the server must call.")

    @model_validator(mode="after")
    def _consistent(self) -> TaskContract:
        names = [t.name for t in self.expected_tools]
        if len(set(names)) != len(names):
            raise ValueError("expectedTools lists a tool name twice")
        for name in self.exact_tool_names:
            if name not in names:
                raise ValueError(f"exactToolNames entry {name!r} is not in expectedTools")
        for i, call in enumerate(self.calls):
            if call.tool not in names:
                raise ValueError(f"calls[{i}].tool {call.tool!r} is not in expectedTools")
        for i, inv in enumerate(self.invariants):
            for tool in (*inv.after, inv.call.tool):
                if tool not in names:
                    raise ValueError(f"invariants[{i}] names tool {tool!r}, which is not in expectedTools")
        for pattern in self.required_source_patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"requiredSourcePatterns entry {pattern!r} is not a valid regex: {exc}") from exc
        if self.deterministic_readiness is not None and (self.expected_tools or self.calls):
            raise ValueError("a source-imports task keeps expectedTools and calls empty")
        view_bindings(self)  # contradictory bindings fail when the contract loads, not at grading time
        ids = [r.id for r in self.requirements]
        if len(set(ids)) != len(ids):
            raise ValueError("requirements lists an id twice")
        for where, named in self.requirement_refs():
            for rid in named:
                if rid not in ids:
                    raise ValueError(f"{where} names requirement {rid!r}, which is not in requirements")
        for i, call in enumerate(self.input_required_calls):
            partner = call.interleave_with
            if partner is not None and (partner == i or partner >= len(self.input_required_calls)):
                raise ValueError(f"inputRequiredCalls[{i}].interleaveWith {partner} names no other call of "
                                 f"inputRequiredCalls (0-based, {len(self.input_required_calls)} calls)")
        if any(c.as_user for c in self.calls) and self.oauth is None:
            raise ValueError("calls[].asUser needs an oauth section")
        if self.oauth is not None:
            from mcp_evals_pipeline.oauth_idp import USERS  # lazily: the IdP module pulls in jwt and cryptography

            users = USERS[self.oauth.backend]
            for i, call in enumerate(self.calls):
                if call.as_user is not None and call.as_user not in users:
                    raise ValueError(f"calls[{i}].asUser {call.as_user!r} is not a user of the {self.oauth.backend} "
                                     f"IdP (have: {', '.join(users)})")
        return self

    def requirement_refs(self) -> list[tuple[str, list[str]]]:
        """(where, requirement ids) for every element of the contract that names requirements."""
        refs: list[tuple[str, list[str]]] = [(f"expectedTools[{i}]", t.requirements)
                                             for i, t in enumerate(self.expected_tools)]
        refs += [(f"expectedTools[{i}].forms[{k}]", f.requirements)
                 for i, t in enumerate(self.expected_tools) for k, f in enumerate(t.forms)]
        refs += [(f"invariants[{i}]", inv.requirements) for i, inv in enumerate(self.invariants)]
        refs += [(f"expectedResources[{i}]", r.requirements) for i, r in enumerate(self.expected_resources)]
        refs += [(f"expectedResourceTemplates[{i}]", r.requirements)
                 for i, r in enumerate(self.expected_resource_templates)]
        refs += [(f"resourceReads[{i}]", r.requirements) for i, r in enumerate(self.resource_reads)]
        for i, call in enumerate(self.calls):
            refs.append((f"calls[{i}]", call.requirements))
            refs += [(f"calls[{i}].readsBefore[{j}]", r.requirements) for j, r in enumerate(call.reads_before)]
            refs += [(f"calls[{i}].readsAfter[{j}]", r.requirements) for j, r in enumerate(call.reads_after)]
        refs += [(f"postCallResourceReads[{i}]", r.requirements) for i, r in enumerate(self.post_call_resource_reads)]
        refs += [(f"views[{i}]", v.requirements) for i, v in enumerate(self.views)]
        refs += [(f"inputRequiredCalls[{i}]", c.requirements) for i, c in enumerate(self.input_required_calls)]
        if self.oauth is not None:
            refs.append(("oauth", self.oauth.requirements))
        if self.upstream is not None:
            refs += [(f"upstream.expectRequests[{i}]", r.requirements)
                     for i, r in enumerate(self.upstream.expect_requests)]
        return refs

    @property
    def effective_runtime(self) -> Literal["python", "node"]:
        """The declared runtime, else the one the entry files imply (the earlier harness's contracts were node)."""
        if self.runtime is not None:
            return self.runtime
        if all(c.endswith((".ts", ".js", ".mjs", ".cjs", ".mts")) for c in self.entry_candidates):
            return "node"
        return "python"

    @property
    def scored_for_pass_rate(self) -> bool:
        return self.deterministic_readiness is None

    def declared_features(self) -> set[str]:
        """The opt-in stages this contract needs (the earlier harness's `viewUri`s count as views)."""
        declared = set()
        if self.views or any(t.view_uri for t in self.expected_tools) or any(c.view_uri for c in self.calls):
            declared.add("views")
        if self.input_required_calls:
            declared.add("input_required")
        if self.oauth is not None:
            declared.add("oauth")
        if self.upstream is not None:
            declared.add("upstream")
        return declared
