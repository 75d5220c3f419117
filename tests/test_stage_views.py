"""The views stage (MCP Apps) against real server processes, and the contract shapes that declare views."""

from __future__ import annotations

import base64
import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from mcp_evals_pipeline.contracts.grade import TrialGrade
from mcp_evals_pipeline.contracts.task import TaskContract
from mcp_evals_pipeline.contracts.views import APP_MIME, ViewBinding, view_bindings
from mcp_evals_pipeline.grader import grade_workspace_sync
from mcp_evals_pipeline.grader.functional import unsupported_features
from mcp_evals_pipeline.grader.stages.views import mime_matches
from mcp_evals_pipeline.tasks.catalog import discover_tasks

from .conftest import TASKS, write_tree

LEGACY_V3_10 = Path(__file__).parent / "fixtures" / "legacy_tasks" / "v3-10-multi-view-incident-console.json"
V2_10 = TASKS / "py-v5-10-multi-view-incident-console"
REQS = {"requirements.txt": "mcp>=2.3,<3\n"}

# A low-level server that serves exactly what spec.json says, so each case below breaks one thing a host needs.
SPEC_SERVER = '''
import json
import os
from pathlib import Path

import mcp_types as types
import uvicorn
from mcp import MCPError
from mcp.server.lowlevel import Server

SPEC = json.loads((Path(__file__).parent / "spec.json").read_text())


async def list_tools(ctx, params):
    return types.ListToolsResult(tools=[
        types.Tool(name=t["name"], input_schema={"type": "object", "properties": {}}, meta=t.get("meta"))
        for t in SPEC["tools"]
    ])


async def call_tool(ctx, params):
    return types.CallToolResult(content=[types.TextContent(type="text", text=f"called {params.name}")])


async def list_resources(ctx, params):
    return types.ListResourcesResult(resources=[
        types.Resource(uri=r["uri"], name=r["uri"], mime_type=r.get("mimeType")) for r in SPEC["resources"]
    ])


async def list_templates(ctx, params):
    return types.ListResourceTemplatesResult(resource_templates=[
        types.ResourceTemplate(uri_template=t, name=t) for t in SPEC.get("templates", [])
    ])


async def read_resource(ctx, params):
    read = SPEC["reads"].get(str(params.uri))
    if read is None or "error" in read:
        raise MCPError(-32002, read["error"] if read else f"unknown resource {params.uri}")
    if "contents" in read:
        return types.ReadResourceResult(contents=read["contents"])
    if "blob" in read:
        content = types.BlobResourceContents(uri=params.uri, mime_type=read.get("mimeType"), blob=read["blob"])
    else:
        content = types.TextResourceContents(uri=params.uri, mime_type=read.get("mimeType"), text=read["text"])
    return types.ReadResourceResult(contents=[content])


server = Server("views-fixture", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool,
                on_list_resources=list_resources, on_list_resource_templates=list_templates,
                on_read_resource=read_resource)

if __name__ == "__main__":
    app = server.streamable_http_app(streamable_http_path="/mcp")
    uvicorn.run(app, host="127.0.0.1", port=int(os.environ["PORT"]), log_level="warning")
'''


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


# View a is read as text, view b as a base64 blob whose MIME type carries an extra charset parameter: both are
# legitimate ways to serve a view.
BASE_SPEC: dict[str, Any] = {
    "tools": [
        {"name": "show_a", "meta": {"ui": {"resourceUri": "ui://t/a.html", "visibility": ["model", "app"]}}},
        {"name": "show_b", "meta": {"ui": {"resourceUri": "ui://t/b.html"}}},
    ],
    "resources": [{"uri": "ui://t/a.html", "mimeType": APP_MIME}, {"uri": "ui://t/b.html", "mimeType": APP_MIME}],
    "reads": {
        "ui://t/a.html": {"mimeType": APP_MIME, "text": "<!doctype html><html><body>View A ready</body></html>"},
        "ui://t/b.html": {"mimeType": "text/html; profile=mcp-app; charset=utf-8",
                          "blob": _b64("<!doctype html><html><body>View B ready</body></html>")},
    },
}

BASE_CONTRACT: dict[str, Any] = {
    "title": "views fixture",
    "runtime": "python",
    "entryCandidates": ["server.py"],
    "expectedTools": [{"name": "show_a"}, {"name": "show_b"}],
    "views": [
        {"tool": "show_a", "resourceUri": "ui://t/a.html", "contains": ["view a ready"]},
        {"tool": "show_b", "resourceUri": "ui://t/b.html", "contains": ["View B ready"]},
    ],
    "calls": [{"tool": "show_a", "args": {}, "expect": {"type": "contains", "value": "called show_a"}}],
}


def _grade(tmp_path: Path, spec: dict[str, Any], contract: dict[str, Any] = BASE_CONTRACT) -> TrialGrade:
    workspace = write_tree(tmp_path, {**REQS, "server.py": SPEC_SERVER})
    (workspace / "spec.json").write_text(json.dumps(spec))
    return grade_workspace_sync(TaskContract.model_validate(contract), workspace)


def _fails_exactly_at(grade: TrialGrade, check_id: str, detail_part: str) -> None:
    """The grade failed at `check_id` of the views stage, every check before it passed, every later one blocked."""
    assert grade.failure_code == "contract.views", (grade.failure_code, grade.error, grade.first_failure)
    ids = [c.id for c in grade.checks]
    at = ids.index(check_id)
    failing = grade.checks[at]
    assert not failing.passed and failing.stage == "views"
    assert detail_part in (failing.detail or ""), failing.detail
    assert all(c.passed for c in grade.checks[:at])
    assert all(not c.passed and c.detail == "blocked by views" for c in grade.checks[at + 1 :])


def _mutated(edit: Any) -> dict[str, Any]:
    spec = copy.deepcopy(BASE_SPEC)
    edit(spec)
    return spec


# ---- real servers ----------------------------------------------------------------------------------------------


def test_views_pass_as_text_and_as_blob_between_resources_and_calls(tmp_path: Path) -> None:
    grade = _grade(tmp_path, BASE_SPEC)
    assert grade.contract_pass, grade.first_failure
    ids = [c.id for c in grade.checks]
    assert ids[ids.index("tools") + 1 :] == ["view:show_a", "view:show_b", "call:show_a:1"]
    views = {c.id: c for c in grade.checks if c.stage == "views"}
    assert views["view:show_a"].detail == f"show_a -> ui://t/a.html ({APP_MIME}, 53 chars of HTML)"
    assert "ui://t/b.html" in (views["view:show_b"].detail or "")


def _set(path: list[Any], value: Any) -> Any:
    def edit(spec: dict[str, Any]) -> None:
        target = spec
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return edit


FAILURES = {
    "bound-to-the-other-view": (
        _set(["tools", 1, "meta"], {"ui": {"resourceUri": "ui://t/a.html"}}), "view:show_b",
        "tool show_b is bound to 'ui://t/a.html' (_meta.ui.resourceUri); expected 'ui://t/b.html'"),
    "no-meta": (
        _set(["tools", 0, "meta"], None), "view:show_a",
        "tool show_a is not bound to a view: expected _meta.ui.resourceUri 'ui://t/a.html'; the tool has no _meta"),
    "ui-not-an-object": (
        _set(["tools", 0, "meta"], {"ui": "ui://t/a.html"}), "view:show_a", "_meta.ui is not an object"),
    "ui-without-uri": (
        _set(["tools", 0, "meta"], {"ui": {"visibility": ["app"]}}), "view:show_a",
        "_meta.ui has no resourceUri string"),
    "deprecated-flat-key-only": (
        _set(["tools", 0, "meta"], {"ui/resourceUri": "ui://t/a.html"}), "view:show_a",
        "_meta has no ui entry (keys: ui/resourceUri); it has only the deprecated flat key"),
    "listed-as-plain-html": (
        _set(["resources", 1, "mimeType"], "text/html"), "view:show_b",
        "view ui://t/b.html is listed with MIME type 'text/html' (expected 'text/html;profile=mcp-app')"),
    "listed-only-as-template": (
        lambda s: (s["resources"].pop(0), s.update(templates=["ui://t/{name}"])), "view:show_a",
        "view ui://t/a.html (bound to show_a) is not listed by resources/list (listed: ui://t/b.html; "
        "resource templates: ui://t/{name})"),
    "read-as-plain-html": (
        _set(["reads", "ui://t/a.html", "mimeType"], "text/html"), "view:show_a",
        "read ui://t/a.html returned MIME type 'text/html' (expected 'text/html;profile=mcp-app')"),
    "html-lacks-the-text": (
        _set(["reads", "ui://t/b.html", "blob"], _b64("<html>Loading...</html>")), "view:show_b",
        "does not contain 'View B ready'"),
    "blob-is-not-text": (
        _set(["reads", "ui://t/b.html", "blob"], "not base64!"), "view:show_b", "not base64 UTF-8 text"),
    "read-fails": (
        _set(["reads", "ui://t/a.html"], {"error": "no such view"}), "view:show_a",
        "read ui://t/a.html failed: MCPError -32002: no such view"),
    "read-has-no-contents": (
        _set(["reads", "ui://t/a.html"], {"contents": []}), "view:show_a", "read ui://t/a.html returned no contents"),
}


@pytest.mark.parametrize("case", sorted(FAILURES))
def test_each_broken_view_fails_at_exactly_its_check(tmp_path: Path, case: str) -> None:
    edit, check_id, detail = FAILURES[case]
    _fails_exactly_at(_grade(tmp_path, _mutated(edit)), check_id, detail)


def test_a_bound_tool_the_server_does_not_list(tmp_path: Path) -> None:
    contract = copy.deepcopy(BASE_CONTRACT)
    contract["views"].append({"tool": "show_c", "resourceUri": "ui://t/c.html"})
    _fails_exactly_at(_grade(tmp_path, BASE_SPEC, contract), "view:show_c",
                      "tool 'show_c' is not listed, so it cannot be bound to ui://t/c.html (listed: show_a, show_b)")


def test_views_follow_the_tool_names_the_tools_stage_matched(tmp_path: Path) -> None:
    contract = copy.deepcopy(BASE_CONTRACT)
    contract["expectedTools"] = [{"name": "Show-A"}, {"name": "show_b"}]
    contract["views"][0]["tool"] = "Show-A"
    contract["calls"][0]["tool"] = "Show-A"
    grade = _grade(tmp_path, BASE_SPEC, contract)
    assert grade.contract_pass, grade.first_failure
    view = next(c for c in grade.checks if c.id == "view:Show-A")
    assert view.passed and (view.detail or "").startswith("show_a -> ui://t/a.html")


# ---- the earlier harness's shape: viewUri on expectedTools and calls -------------------------------------------


def _legacy_as_python() -> dict[str, Any]:
    """The earlier harness's v3-10 contract as a python task: the views part as it was, the entry ours."""
    data = json.loads(LEGACY_V3_10.read_text())
    for key in ("buildCommand", "startCommand"):
        data.pop(key)
    return {**data, "runtime": "python", "entryCandidates": ["server.py"]}


def test_legacy_view_uris_become_bindings() -> None:
    contract = TaskContract.model_validate(json.loads(LEGACY_V3_10.read_text()))
    assert "views" in contract.declared_features()
    assert [(b.tool, b.resource_uri, b.mime_type, b.contains) for b in view_bindings(contract)] == [
        ("list_incidents", "ui://views/incident-list.html", APP_MIME, []),
        ("get_incident", "ui://views/incident-detail.html", APP_MIME, []),
    ]
    # The views part is gradable (whether its node runtime is, is the runtimes' business).
    assert "views" not in unsupported_features(contract)


def test_legacy_contract_grades_views_on_a_python_server(tmp_path: Path) -> None:
    contract = TaskContract.model_validate(_legacy_as_python())
    grade = grade_workspace_sync(contract, _copy(V2_10 / "golden", tmp_path / "g"))
    assert grade.contract_pass, grade.first_failure
    assert [c.id for c in grade.checks if c.stage == "views"] == ["view:list_incidents", "view:get_incident"]
    grade = grade_workspace_sync(contract, _copy(V2_10 / "negatives" / "wrong-view-binding", tmp_path / "n"))
    _fails_exactly_at(grade, "view:get_incident", "tool get_incident is bound to 'ui://views/incident-list.html'")


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("negative.json", "__pycache__"))
    return dst


def test_view_bindings_merge_both_shapes_and_refuse_contradictions() -> None:
    base = {"title": "t", "runtime": "python", "entryCandidates": ["server.py"],
            "expectedTools": [{"name": "a", "viewUri": "ui://v/a.html"}, {"name": "b"}],
            "calls": [{"tool": "a", "viewUri": "ui://v/a.html"}, {"tool": "b", "viewUri": "ui://v/b.html"}]}
    contract = TaskContract.model_validate(base)
    assert [(b.tool, b.resource_uri) for b in view_bindings(contract)] == [("a", "ui://v/a.html"),
                                                                           ("b", "ui://v/b.html")]
    explicit = TaskContract.model_validate({**base, "views": [
        {"tool": "b", "resourceUri": "ui://v/b.html", "contains": ["B"]}]})
    assert [(b.tool, b.contains) for b in view_bindings(explicit)] == [("b", ["B"]), ("a", [])]

    # Contradictions are refused when the contract loads (pydantic's ValidationError is a ValueError).
    with pytest.raises(ValueError, match=r"calls\[0\]\.viewUri binds tool 'a' to 'ui://v/other.html'"):
        TaskContract.model_validate({**base, "calls": [{"tool": "a", "viewUri": "ui://v/other.html"}]})
    with pytest.raises(ValueError, match="views binds tool 'b' twice"):
        TaskContract.model_validate({**base, "views": [{"tool": "b", "resourceUri": "ui://v/b.html"}] * 2})


def test_a_view_binding_must_name_a_ui_resource() -> None:
    with pytest.raises(ValidationError, match="ui://"):
        ViewBinding.model_validate({"tool": "a", "resourceUri": "https://example.com/a.html"})
    with pytest.raises(ValidationError, match="non-empty"):
        ViewBinding.model_validate({"tool": "a", "resourceUri": "ui://a.html", "contains": [""]})


@pytest.mark.parametrize(("got", "ok"), [
    ("text/html;profile=mcp-app", True),
    ("text/html; profile=mcp-app", True),
    ('TEXT/HTML; Profile="mcp-app"; charset=utf-8', True),
    ("text/html", False),
    ("text/html;profile=other", False),
    ("text/plain;profile=mcp-app", False),
    (None, False),
])
def test_mime_matching(got: str | None, ok: bool) -> None:
    assert mime_matches(got, APP_MIME) is ok


# ---- the checked-in tasks ---------------------------------------------------------------------------------------


def test_tasks_with_views_state_every_view_string_in_the_prompt() -> None:
    """test_task_suite checks call and read strings; the strings a view must contain are held to the same rule."""
    tasks, _ = discover_tasks()  # a task that fails to load is test_task_suite's finding, not this test's
    with_views = [t for t in tasks if t.kind == "build" and "views" in t.contract.declared_features()]
    assert any(t.id == "py-v5-10-multi-view-incident-console" for t in with_views)
    for task in with_views:
        for binding in view_bindings(task.contract):
            needed = [binding.tool, binding.resource_uri, binding.mime_type, *binding.contains]
            missing = [s for s in needed if s not in task.prompt]
            assert not missing, f"{task.id}: prompt.md never states {missing}"
