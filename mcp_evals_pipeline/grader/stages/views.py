"""The `views` stage (MCP Apps): each tool a contract binds to a view must render it, as a host would find it.

One check per binding, `view:<tool>`, after the resources stage and before the calls (a view is part of what the
server lists, not of what a call returns):

1. `tools/list` lists the tool with `_meta.ui.resourceUri` equal to the binding's `ui://` URI;
2. `resources/list` lists that resource with the app MIME type (`text/html;profile=mcp-app`);
3. `resources/read` of it returns that MIME type and HTML containing each of the binding's `contains` strings.

A host that does not find all three renders no view, so each is required. Everything goes over the grading's
own legacy session (the MCP Apps metadata is the same on every protocol version; see the probes).
"""

from __future__ import annotations

import base64
import binascii
from functools import partial
from typing import Any

import mcp_types as types

from mcp_evals_pipeline.contracts.views import ViewBinding, view_bindings
from mcp_evals_pipeline.grader.expectations import clip
from mcp_evals_pipeline.grader.features import Feature, GradingContext, Step, StepFailed, register

# The pre-release spelling of the binding, `_meta["ui/resourceUri"]`, which the ext-apps spec deprecates; named
# in a failure so a reader sees why a server that "has the URI" still fails.
DEPRECATED_FLAT_KEY = "ui/resourceUri"


def _parse_mime(value: str | None) -> tuple[str, dict[str, str]]:
    """`text/html; profile="mcp-app"` -> ("text/html", {"profile": "mcp-app"}), lowercased."""
    kind, *params = (value or "").split(";")
    parsed = {}
    for param in params:
        key, _, val = param.partition("=")
        parsed[key.strip().lower()] = val.strip().strip('"').lower()
    return kind.strip().lower(), parsed


def mime_matches(got: str | None, expected: str) -> bool:
    """Same type and every parameter the contract names (the profile); extra parameters such as a charset are a
    legitimate way to write the same MIME type, so they do not fail a view."""
    got_kind, got_params = _parse_mime(got)
    want_kind, want_params = _parse_mime(expected)
    return got_kind == want_kind and all(got_params.get(k) == v for k, v in want_params.items())


def bound_uri(tool: types.Tool) -> tuple[Any, str]:
    """The tool's `_meta.ui.resourceUri` and, when it is not a string, a description of what the listing has."""
    meta = tool.meta or {}
    ui = meta.get("ui")
    if isinstance(ui, dict) and isinstance(ui.get("resourceUri"), str):
        return ui["resourceUri"], ""
    if isinstance(ui, dict):
        found = f"_meta.ui has no resourceUri string (_meta.ui = {clip(str(ui), 200)})"
    elif ui is not None:
        found = f"_meta.ui is not an object ({clip(repr(ui), 200)})"
    elif not meta:
        found = "the tool has no _meta"
    else:
        found = f"_meta has no ui entry (keys: {', '.join(sorted(meta))})"
    if isinstance(meta.get(DEPRECATED_FLAT_KEY), str):
        found += f'; it has only the deprecated flat key _meta["{DEPRECATED_FLAT_KEY}"] = {meta[DEPRECATED_FLAT_KEY]!r}'
    return None, found


def content_html(content: types.TextResourceContents | types.BlobResourceContents) -> str | None:
    """The HTML of one read content; a base64 blob is a legitimate way to ship it. None: not decodable text."""
    if isinstance(content, types.TextResourceContents):
        return content.text
    try:
        return base64.b64decode(content.blob, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None


@register
class Views(Feature):
    name = "views"

    def __init__(self, grading: GradingContext):
        super().__init__(grading)
        # Listed once per grading, by the first check that needs them: the listing does not change between checks.
        self._tools: dict[str, types.Tool] | None = None
        self._resources: dict[str, types.Resource] | None = None

    def steps(self) -> list[Step]:
        return [Step(f"view:{b.tool}", "views", partial(self._check, b), list(b.requirements))
                for b in view_bindings(self.grading.contract)]

    async def _templates_note(self) -> str:
        """For a view missing from resources/list: the resource templates, since serving views only through a
        template is a common way to get there. Only a hint: a server without templates answers nothing here."""
        client = self.grading.client
        assert client is not None
        try:
            templates = await self.grading.list_all("resources/templates/list", client.list_resource_templates,
                                         "resource_templates")
        except StepFailed:
            return ""
        if not templates:
            return ""
        return f"; resource templates: {', '.join(sorted(t.uri_template for t in templates))}"

    async def _check(self, binding: ViewBinding) -> str:
        client = self.grading.client
        assert client is not None
        uri = binding.resource_uri

        if self._tools is None:
            self._tools = {t.name: t for t in await self.grading.list_all("tools/list", client.list_tools, "tools")}
        # The name the tools stage matched (it may differ in case or separators); else the contract's spelling.
        name = self.grading.tool_names.get(binding.tool, binding.tool)
        tool = self._tools.get(name)
        if tool is None:
            raise StepFailed(f"tool {binding.tool!r} is not listed, so it cannot be bound to {uri} "
                             f"(listed: {', '.join(sorted(self._tools)) or 'none'})")
        got_uri, found = bound_uri(tool)
        if got_uri is None:
            raise StepFailed(f"tool {name} is not bound to a view: expected _meta.ui.resourceUri {uri!r}; {found}")
        if got_uri != uri:
            raise StepFailed(f"tool {name} is bound to {got_uri!r} (_meta.ui.resourceUri); expected {uri!r}")

        if self._resources is None:
            listed = await self.grading.list_all("resources/list", client.list_resources, "resources")
            self._resources = {str(r.uri): r for r in listed}
        resource = self._resources.get(uri)
        if resource is None:
            raise StepFailed(f"view {uri} (bound to {name}) is not listed by resources/list "
                             f"(listed: {', '.join(sorted(self._resources)) or 'none'}{await self._templates_note()})")
        if not mime_matches(resource.mime_type, binding.mime_type):
            raise StepFailed(f"view {uri} is listed with MIME type {resource.mime_type!r} "
                             f"(expected {binding.mime_type!r})")

        timeout = self.grading.contract.call_timeout_seconds
        result: types.ReadResourceResult = await self.grading.talk(
            f"read {uri}", lambda: client.read_resource(uri), timeout + 5)
        if not result.contents:
            raise StepFailed(f"read {uri} returned no contents (expected the view's HTML)")
        # The content for the URI asked for; a server answering with some other URI still gets its first content.
        content = next((c for c in result.contents if str(c.uri) == uri), result.contents[0])
        if not mime_matches(content.mime_type, binding.mime_type):
            raise StepFailed(f"read {uri} returned MIME type {content.mime_type!r} (expected {binding.mime_type!r})")
        html = content_html(content)
        if html is None:
            raise StepFailed(f"read {uri} returned a blob that is not base64 UTF-8 text (expected the view's HTML)")
        missing = [s for s in binding.contains if s.lower() not in html.lower()]
        if missing:
            wanted = ", ".join(repr(s) for s in missing)
            raise StepFailed(f'read {uri} -> "{clip(html)}" does not contain {wanted}')
        return f"{name} -> {uri} ({content.mime_type}, {len(html)} chars of HTML)"
