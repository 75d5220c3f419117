"""OpenAPI-driven MCP server for the order service (low-level `mcp` Server API).

At start-up every operation of ./openapi.json becomes one tool named after its
operationId. Its input schema is built from the operation's path/query
parameters plus the (resolved) properties of its JSON request body. A call is
validated against that schema with strict JSON types, then turned into the
HTTP request and sent to $ORDERS_API_URL (never to the document's `servers`).
"""

from __future__ import annotations

import copy
import json
import os
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import anyio
import jsonschema
import uvicorn

from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

SPEC_PATH = Path(__file__).resolve().parent / "openapi.json"
HTTP_METHODS = ("get", "post", "put", "patch", "delete")
OPENAPI_ONLY_KEYS = {"nullable", "example", "readOnly", "writeOnly", "xml", "externalDocs", "deprecated"}

_checker = jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
    "integer", lambda _c, value: type(value) is int  # 2.0 and true are not JSON integers here
)
StrictValidator = jsonschema.validators.extend(jsonschema.Draft202012Validator, type_checker=_checker)


@dataclass
class Operation:
    name: str
    method: str
    path: str
    description: str
    path_params: list[str] = field(default_factory=list)
    query_params: list[str] = field(default_factory=list)
    body_params: list[str] = field(default_factory=list)
    has_body: bool = False
    schema: dict[str, Any] = field(default_factory=dict)


def _resolve(node: Any, spec: dict[str, Any]) -> Any:
    """Inline local $refs and drop OpenAPI-only keywords, giving plain JSON Schema."""
    if isinstance(node, dict):
        if "$ref" in node:
            target: Any = spec
            for part in node["$ref"].removeprefix("#/").split("/"):
                target = target[part]
            return _resolve(target, spec)
        return {k: _resolve(v, spec) for k, v in node.items() if k not in OPENAPI_ONLY_KEYS}
    if isinstance(node, list):
        return [_resolve(v, spec) for v in node]
    return node


def load_operations(spec: dict[str, Any]) -> dict[str, Operation]:
    operations: dict[str, Operation] = {}
    for path, item in spec["paths"].items():
        for method in HTTP_METHODS:
            op = item.get(method)
            if op is None:
                continue
            props: dict[str, Any] = {}
            required: list[str] = []
            entry = Operation(
                name=op["operationId"],
                method=method.upper(),
                path=path,
                description=op.get("description") or op.get("summary") or "",
            )
            for param in item.get("parameters", []) + op.get("parameters", []):
                param = _resolve(param, spec)
                props[param["name"]] = dict(param.get("schema", {}), description=param.get("description", ""))
                if param.get("required") or param["in"] == "path":
                    required.append(param["name"])
                (entry.path_params if param["in"] == "path" else entry.query_params).append(param["name"])
            body = op.get("requestBody")
            if body is not None:
                entry.has_body = True
                body_schema = _resolve(body["content"]["application/json"]["schema"], spec)
                for name, prop in body_schema.get("properties", {}).items():
                    props[name] = prop
                    entry.body_params.append(name)
                required.extend(body_schema.get("required", []))
            entry.schema = {"type": "object", "properties": props, "required": required}
            operations[entry.name] = entry
    return operations


OPERATIONS = load_operations(json.loads(SPEC_PATH.read_text(encoding="utf-8")))


class ServiceError(Exception):
    pass


def _send(method: str, url: str, body: dict[str, Any] | None) -> Any:
    data = None
    headers = {"Accept": "application/json"}
    if body is not None:
        data = json.dumps(body).encode("utf-8")
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read().decode("utf-8"))
    except urllib.error.HTTPError as err:
        raw = err.read().decode("utf-8", "replace")
        try:
            message = json.loads(raw).get("error") or raw
        except (ValueError, AttributeError):
            message = raw
        raise ServiceError(f"{err.code} from order service: {message}") from None
    except urllib.error.URLError as err:
        raise ServiceError(f"order service unreachable: {err.reason}") from None


async def invoke(op: Operation, args: dict[str, Any]) -> Any:
    path = op.path
    for name in op.path_params:
        path = path.replace("{" + name + "}", quote(args[name], safe=""))
    query = {name: args[name] for name in op.query_params if name in args}
    url = os.environ["ORDERS_API_URL"].rstrip("/") + path
    if query:
        url += "?" + urlencode(query, quote_via=quote)
    body = {name: args[name] for name in op.body_params if name in args} if op.has_body else None
    return await anyio.to_thread.run_sync(_send, op.method, url, body)


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


async def list_tools(ctx: ServerRequestContext, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    return types.ListToolsResult(
        tools=[
            types.Tool(name=op.name, description=op.description, input_schema=copy.deepcopy(op.schema))
            for op in OPERATIONS.values()
        ]
    )


async def call_tool(ctx: ServerRequestContext, params: types.CallToolRequestParams) -> types.CallToolResult:
    op = OPERATIONS.get(params.name)
    if op is None:
        return _error(f"unknown tool: {params.name}")
    args = params.arguments or {}
    problem = jsonschema.exceptions.best_match(StrictValidator(op.schema).iter_errors(args))
    if problem is not None:
        where = "/".join(str(p) for p in problem.absolute_path) or "arguments"
        return _error(f"invalid argument {where}: {problem.message}")
    try:
        payload = await invoke(op, args)
    except ServiceError as exc:
        return _error(str(exc))
    content = [types.TextContent(type="text", text=json.dumps(payload))]
    if isinstance(payload, dict):
        return types.CallToolResult(content=content, structured_content=payload)
    return types.CallToolResult(content=content)


server = Server("order-service", on_list_tools=list_tools, on_call_tool=call_tool)

if __name__ == "__main__":
    app = server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
    uvicorn.run(app, host="127.0.0.1", port=int(os.environ["PORT"]), log_level="warning")
