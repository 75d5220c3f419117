"""Turning an OpenAPI 3 document into MCP tool definitions and HTTP requests (stdlib urllib, no client library)."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any

HTTP_METHODS = ("get", "post", "put", "patch", "delete")


class UpstreamError(Exception):
    """The service answered with a non-2xx status, or could not be reached."""


def _resolve(spec: dict[str, Any], node: Any) -> Any:
    """Inline every local $ref, so a tool's input schema stands on its own."""
    if isinstance(node, dict):
        if "$ref" in node:
            target: Any = spec
            for part in node["$ref"].removeprefix("#/").split("/"):
                target = target[part]
            return _resolve(spec, target)
        return {k: _resolve(spec, v) for k, v in node.items()}
    if isinstance(node, list):
        return [_resolve(spec, v) for v in node]
    return node


def _json_schema(node: Any) -> Any:
    """OpenAPI 3.0 schema -> JSON Schema: `nullable` and `example` are OpenAPI-only keywords (this document has
    no property of either name)."""
    if isinstance(node, dict):
        return {k: _json_schema(v) for k, v in node.items() if k not in ("nullable", "example")}
    if isinstance(node, list):
        return [_json_schema(v) for v in node]
    return node


@dataclass
class Operation:
    name: str
    method: str
    path: str
    description: str
    path_params: list[str] = field(default_factory=list)
    query_params: list[str] = field(default_factory=list)
    body_props: list[str] = field(default_factory=list)
    input_schema: dict[str, Any] = field(default_factory=dict)

    def request(self, base_url: str, args: dict[str, Any], timeout: float = 10.0) -> Any:
        path = self.path
        for name in self.path_params:
            path = path.replace("{" + name + "}", urllib.parse.quote(str(args[name]), safe=""))
        query = {k: args[k] for k in self.query_params if args.get(k) is not None}
        url = base_url.rstrip("/") + path + (("?" + urllib.parse.urlencode(query)) if query else "")
        data = None
        headers = {"Accept": "application/json"}
        if self.body_props:
            body = {k: args[k] for k in self.body_props if args.get(k) is not None}
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(url, data=data, method=self.method.upper(), headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            raw = exc.read().decode("utf-8", errors="replace")
            try:
                message = json.loads(raw).get("error", raw)
            except (ValueError, AttributeError):
                message = raw
            raise UpstreamError(f"HTTP {exc.code} from {self.method.upper()} {path}: {message}") from exc
        except (urllib.error.URLError, OSError) as exc:
            raise UpstreamError(f"order service unreachable at {base_url}: {exc}") from exc


def operations(spec: dict[str, Any]) -> dict[str, Operation]:
    ops: dict[str, Operation] = {}
    for path, item in spec["paths"].items():
        shared = item.get("parameters", [])
        for method in HTTP_METHODS:
            if method not in item:
                continue
            raw = item[method]
            op = Operation(name=raw["operationId"], method=method, path=path,
                           description=raw.get("description") or raw.get("summary") or raw["operationId"])
            properties: dict[str, Any] = {}
            required: list[str] = []
            for param in _resolve(spec, shared + raw.get("parameters", [])):
                properties[param["name"]] = {**_json_schema(param.get("schema", {"type": "string"})),
                                             "description": param.get("description", "")}
                if param.get("required"):
                    required.append(param["name"])
                (op.path_params if param["in"] == "path" else op.query_params).append(param["name"])
            body = _resolve(spec, raw.get("requestBody", {}))
            schema = body.get("content", {}).get("application/json", {}).get("schema")
            if schema:
                for name, prop in schema.get("properties", {}).items():
                    properties[name] = _json_schema(prop)
                    op.body_props.append(name)
                if body.get("required"):
                    required += schema.get("required", [])
            op.input_schema = {"type": "object", "properties": properties, "required": required}
            ops[op.name] = op
    return ops
