"""`views`: MCP Apps views, each a `ui://` HTML resource bound to the tool that renders it.

On the wire (the `io.modelcontextprotocol/ui` extension) a binding is the tool's `_meta.ui.resourceUri` naming a
`ui://` resource that is listed and read with the MIME type `text/html;profile=mcp-app`.

The earlier harness's contracts spell a binding as `viewUri` on an `expectedTools` entry or on a `calls` entry;
`view_bindings` turns those into bindings too, so one stage grades both shapes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pydantic import Field, field_validator

from mcp_evals_pipeline.contracts.task_base import Covers


class _ViewUri(Protocol):
    """An expected tool or a call of the earlier harness's format, as far as its `viewUri` goes."""

    @property
    def view_uri(self) -> str | None: ...


class _ExpectedTool(_ViewUri, Protocol):
    @property
    def name(self) -> str: ...


class _Call(_ViewUri, Protocol):
    @property
    def tool(self) -> str: ...


class Bindable(Protocol):
    """What view_bindings reads of a contract (contracts/task.py's TaskContract): a protocol, so this module
    needs nothing of the module that uses it."""

    @property
    def views(self) -> Sequence[ViewBinding]: ...

    @property
    def expected_tools(self) -> Sequence[_ExpectedTool]: ...

    @property
    def calls(self) -> Sequence[_Call]: ...

APP_MIME = "text/html;profile=mcp-app"
UI_SCHEME = "ui://"


class ViewBinding(Covers):
    tool: str
    resource_uri: str  # ui://...
    mime_type: str = APP_MIME
    # Strings the view's HTML must contain, compared ignoring case like a `contains` expectation (an agent that
    # writes "Unable to load Incidents." built a working view). Each must appear verbatim in prompt.md.
    contains: list[str] = Field(default_factory=list)

    @field_validator("resource_uri")
    @classmethod
    def _ui_scheme(cls, value: str) -> str:
        # Hosts render only ui:// resources; a binding to anything else could never pass.
        if not value.startswith(UI_SCHEME) or value == UI_SCHEME:
            raise ValueError(f"a view's resourceUri must be a {UI_SCHEME} URI, got {value!r}")
        return value

    @field_validator("contains")
    @classmethod
    def _non_empty(cls, value: list[str]) -> list[str]:
        if any(not s for s in value):
            raise ValueError("contains entries must be non-empty strings")
        return value


def view_bindings(contract: Bindable) -> list[ViewBinding]:
    """Every binding the contract declares, one per tool: `views` first, then the earlier harness's `viewUri`s on
    `expectedTools` and on `calls` (in that order). A tool bound twice to the same view counts once; a tool bound
    to two different views, or listed twice in `views`, is a contradiction in the contract and raises ValueError.
    """
    found: dict[str, ViewBinding] = {}
    for binding in contract.views:
        if binding.tool in found:
            raise ValueError(f"views binds tool {binding.tool!r} twice")
        found[binding.tool] = binding
    legacy = [(f"expectedTools[{t.name}].viewUri", t.name, t.view_uri) for t in contract.expected_tools]
    legacy += [(f"calls[{i}].viewUri", c.tool, c.view_uri) for i, c in enumerate(contract.calls)]
    for where, tool, uri in legacy:
        if uri is None:
            continue
        known = found.get(tool)
        if known is None:
            found[tool] = ViewBinding(tool=tool, resource_uri=uri)
        elif known.resource_uri != uri:
            raise ValueError(f"{where} binds tool {tool!r} to {uri!r}, but it is already bound to "
                             f"{known.resource_uri!r}")
    return list(found.values())
