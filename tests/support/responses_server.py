"""A local OpenAI Responses API server for tests: real HTTP on 127.0.0.1, streaming SSE `POST /v1/responses`,
scripted turns. This is what the Codex CLI talks to (it no longer speaks chat.completions).

    with ScriptedResponses([turn(shell("ls")), turn(message("done"))]) as server:
        ... codex exec -c model_providers.x.base_url=server.base_url ...

Each scripted answer is one model response (one "turn"); its output items are built against the request that
asked for it, so `shell(cmd)` calls whichever shell tool the CLI offered (shell_command, shell or exec_command).
Every request body and its headers are recorded in `server.requests` / `server.headers`. When the script runs out
the server answers 500 with a message saying so, so a test never hangs on a missing answer.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Body = dict[str, Any]
Item = Callable[[Body], dict[str, Any]]
Answer = dict[str, Any]


def _tools(body: Body) -> dict[str, str]:
    """Every tool the request offers, name -> type, including namespaced ones and those the CLI declares in an
    `additional_tools` input item (Codex's code mode for the newest models)."""
    found: dict[str, str] = {}

    def walk(tools: Any) -> None:
        for tool in tools or []:
            if not isinstance(tool, dict):
                continue
            if tool.get("type") == "namespace":
                walk(tool.get("tools"))
            elif tool.get("name"):
                found[tool["name"]] = tool.get("type", "function")

    walk(body.get("tools"))
    for item in body.get("input") or []:
        if isinstance(item, dict) and item.get("type") == "additional_tools":
            walk(item.get("tools"))
    return found


def _exec_call(call: str, call_id: str) -> dict[str, Any]:
    """Code mode's `exec` custom tool call: JavaScript awaiting one tool call and printing its result."""
    source = f"const r = await {call};\ntext(typeof r === 'string' ? r : JSON.stringify(r));"
    return {"type": "custom_tool_call", "id": f"ctc_{uuid.uuid4().hex[:12]}", "call_id": call_id, "name": "exec",
            "input": source, "status": "completed"}


def shell(command: str, call_id: str | None = None) -> Item:
    """A tool call running `command` with the CLI's shell tool, whatever it is in this version: code mode's `exec`
    (JavaScript calling tools.exec_command), shell_command, shell or exec_command."""
    cid = call_id or f"call_{uuid.uuid4().hex[:12]}"

    def build(body: Body) -> dict[str, Any]:
        tools = _tools(body)
        if tools.get("exec") == "custom":
            return _exec_call(f"tools.exec_command({{cmd: {json.dumps(command)}}})", cid)
        if "shell_command" in tools:
            name, args = "shell_command", {"command": command}
        elif "shell" in tools:
            name, args = "shell", {"command": ["bash", "-lc", command]}
        elif "exec_command" in tools:
            name, args = "exec_command", {"cmd": command}
        else:
            raise RuntimeError(f"the request offers no shell tool (tools: {sorted(tools)})")
        return {"type": "function_call", "id": f"fc_{uuid.uuid4().hex[:12]}", "call_id": cid, "name": name,
                "arguments": json.dumps(args), "status": "completed"}

    return build


def mcp_tool(tool: str, arguments: dict[str, Any], server: str = "server", call_id: str | None = None) -> Item:
    """A call of an MCP server's tool, as this CLI version offers it: from code mode's `exec` (JavaScript calling
    tools.mcp__<server>__<tool>: the CLI defers MCP namespaces there), else the function tool of that name."""
    cid = call_id or f"call_{uuid.uuid4().hex[:12]}"
    name = f"mcp__{server}__{tool}"

    def build(body: Body) -> dict[str, Any]:
        tools = _tools(body)
        if tools.get("exec") == "custom":
            return _exec_call(f"tools.{name}({json.dumps(arguments)})", cid)
        if name not in tools:
            raise RuntimeError(f"the request offers no {name} (tools: {sorted(tools)})")
        return {"type": "function_call", "id": f"fc_{uuid.uuid4().hex[:12]}", "call_id": cid, "name": name,
                "arguments": json.dumps(arguments), "status": "completed"}

    return build


def write_file(path: str, content: str) -> Item:
    """A shell call writing `content` to `path` (a quoted heredoc: no expansion)."""
    marker = f"EOF_{uuid.uuid4().hex[:8]}"
    return shell(f"mkdir -p \"$(dirname '{path}')\" && cat > '{path}' <<'{marker}'\n{content}\n{marker}")


def message(text: str) -> Item:
    def build(body: Body) -> dict[str, Any]:
        return {"type": "message", "id": f"msg_{uuid.uuid4().hex[:12]}", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}]}

    return build


def turn(*items: Item, input_tokens: int = 1000, output_tokens: int = 50, cached_tokens: int = 0) -> Answer:
    """One model response with these output items and this usage."""
    return {"kind": "turn", "items": list(items), "usage": (input_tokens, output_tokens, cached_tokens)}


def failure(status: int, message: str = "scripted failure", delay_s: float = 0.0) -> Answer:
    return {"kind": "failure", "status": status, "message": message, "delay": delay_s}


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps({'type': event, **data})}\n\n".encode()


class ScriptedResponses:
    def __init__(self, script: list[Answer] | Callable[[Body], Answer]):
        self.script = script
        self.requests: list[Body] = []
        self.headers: list[dict[str, str]] = []
        self.errors: list[str] = []  # scripted turns that could not be built against their request
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def responses_requests(self) -> list[Body]:
        return [body for body in self.requests if "input" in body]

    def __enter__(self) -> ScriptedResponses:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _next(self, body: Body) -> Answer:
        with self._lock:
            self.requests.append(body)
            if callable(self.script):
                return self.script(body)
            if not self.script:
                return failure(500, "the test's script has no answer left")
            return self.script.pop(0)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _send_json(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._send_json(200, {"object": "list", "data": [], "models": []})
                    return
                self._send_json(404, {"error": {"message": f"no route GET {self.path}"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"_raw": raw.decode("utf-8", "replace")}
                if not self.path.split("?")[0].rstrip("/").endswith("/responses"):
                    self._send_json(404, {"error": {"message": f"no route POST {self.path}"}})
                    return
                outer.headers.append({k.lower(): v for k, v in self.headers.items()})
                answer = outer._next(body)
                if answer["kind"] == "turn":
                    try:
                        answer = {**answer, "built": [build(body) for build in answer["items"]]}
                    except Exception as exc:  # a script that does not fit the request: say so, do not hang
                        answer = failure(500, f"scripted turn failed to build: {exc}")
                        outer.errors.append(str(exc))
                if answer["kind"] == "failure":
                    time.sleep(answer["delay"])
                    self._send_json(answer["status"],
                                    {"error": {"message": answer["message"], "type": "server_error"}})
                    return
                self._stream(body, answer)

            def _stream(self, body: Body, answer: Answer) -> None:
                response_id = f"resp_{uuid.uuid4().hex[:16]}"
                model = body.get("model", "scripted")
                items = answer["built"]
                input_tokens, output_tokens, cached = answer["usage"]
                base = {"id": response_id, "object": "response", "created_at": int(time.time()), "model": model}
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("connection", "close")
                self.end_headers()
                chunks = [_sse("response.created", {"response": {**base, "status": "in_progress", "output": []}})]
                for index, item in enumerate(items):
                    chunks.append(_sse("response.output_item.added", {"output_index": index, "item": item}))
                    if item["type"] == "message":
                        text = item["content"][0]["text"]
                        chunks.append(_sse("response.output_text.delta", {
                            "item_id": item["id"], "output_index": index, "content_index": 0, "delta": text}))
                    chunks.append(_sse("response.output_item.done", {"output_index": index, "item": item}))
                chunks.append(_sse("response.completed", {"response": {
                    **base, "status": "completed", "output": items,
                    "usage": {"input_tokens": input_tokens, "input_tokens_details": {"cached_tokens": cached},
                              "output_tokens": output_tokens, "output_tokens_details": {"reasoning_tokens": 0},
                              "total_tokens": input_tokens + output_tokens}}}))
                for chunk in chunks:
                    self.wfile.write(chunk)
                self.wfile.flush()
                self.close_connection = True

        return Handler
