"""A local Anthropic Messages API server for tests: real HTTP on 127.0.0.1, scripted answers, streamed as SSE.

    with ScriptedMessages([turn("Writing it.", [tool_use("Write", {"file_path": "a.txt", "content": "hi"})]),
                           turn("Done."), failure(500)]) as server:
        ... ANTHROPIC_BASE_URL=server.base_url claude -p ...

The real Claude Code CLI talks to it: `POST /v1/messages` answered as the CLI asks (a `text/event-stream` of
message_start / content_block_* / message_delta / message_stop when the body says `"stream": true`, one JSON
message otherwise), `POST /v1/messages/count_tokens` with a token estimate. Scripted answers go to the agent's
own turns only, the requests that offer tools; the CLI's side requests (a session title, a quota probe: no
tools) get a short canned reply so they never eat the script. Every request is recorded in `server.requests`
(body, path, headers, whether it took a scripted answer). When the script runs out the server answers 500 with a
message saying so, so a test never hangs on a missing answer.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = dict[str, Any]


def tool_use(name: str, input: dict[str, Any], id: str | None = None) -> dict[str, Any]:
    """A tool_use content block (the CLI's own tools: Bash, Write, Read, Edit...)."""
    return {"type": "tool_use", "id": id or f"toolu_{uuid.uuid4().hex[:20]}", "name": name, "input": input}


def turn(text: str | None = None, tools: list[dict[str, Any]] | None = None, *, input_tokens: int = 100,
         output_tokens: int = 20, cache_creation_input_tokens: int = 0, cache_read_input_tokens: int = 0,
         model: str | None = None, delay_s: float = 0.0) -> Answer:
    """One assistant message: optional text, then tool_use blocks (stop_reason tool_use) or none (end_turn)."""
    content: list[dict[str, Any]] = []
    if text is not None:
        content.append({"type": "text", "text": text})
    content.extend(tools or [])
    return {"kind": "turn", "content": content, "stop_reason": "tool_use" if tools else "end_turn",
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens,
                      "cache_creation_input_tokens": cache_creation_input_tokens,
                      "cache_read_input_tokens": cache_read_input_tokens},
            "model": model, "delay": delay_s}


def failure(status: int, message: str = "scripted failure", error_type: str = "api_error",
            delay_s: float = 0.0, repeat: bool = False) -> Answer:
    """An error response. `repeat`: answer every later agent request the same way (the script never advances)."""
    return {"kind": "failure", "status": status, "message": message, "error_type": error_type, "delay": delay_s,
            "repeat": repeat}


@dataclass
class Recorded:
    path: str
    body: dict[str, Any]
    headers: dict[str, str]
    scripted: bool  # an agent turn that took (or would have taken) a scripted answer
    answer: str = ""  # "turn", "failure <status>", "side", "count_tokens", "404"
    t: float = field(default_factory=time.monotonic)


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def _message_events(message: dict[str, Any]) -> list[bytes]:
    """The SSE stream of one complete message, as the Messages API sends it."""
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None,
             "usage": {**usage, "output_tokens": 1}}
    events = [_sse("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            events.append(_sse("content_block_start", {"type": "content_block_start", "index": index,
                                                       "content_block": {"type": "text", "text": ""}}))
            events.append(_sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                                       "delta": {"type": "text_delta", "text": block["text"]}}))
        else:
            events.append(_sse("content_block_start", {"type": "content_block_start", "index": index,
                                                       "content_block": {**block, "input": {}}}))
            events.append(_sse("content_block_delta", {
                "type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}}))
        events.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(_sse("message_delta", {"type": "message_delta",
                                         "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                                         "usage": {"output_tokens": usage["output_tokens"]}}))
    events.append(_sse("message_stop", {"type": "message_stop"}))
    return events


class ScriptedMessages:
    def __init__(self, script: list[Answer] | Callable[[dict[str, Any]], Answer],
                 side_reply: str = "Scripted session"):
        self.script = script
        self.side_reply = side_reply
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """What ANTHROPIC_BASE_URL takes (the CLI appends /v1/messages)."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def agent_requests(self) -> list[Recorded]:
        """The agent's own turns (requests that offered tools), in order."""
        return [r for r in self.requests if r.scripted]

    def __enter__(self) -> ScriptedMessages:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    @staticmethod
    def is_agent_turn(body: dict[str, Any]) -> bool:
        return bool(body.get("tools"))

    def _next(self, body: dict[str, Any]) -> Answer:
        with self._lock:
            if callable(self.script):
                return self.script(body)
            if not self.script:
                return failure(500, "the test's script has no answer left")
            if self.script[0].get("repeat"):
                return self.script[0]
            return self.script.pop(0)

    def _record(self, entry: Recorded) -> None:
        with self._lock:
            self.requests.append(entry)

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
                self.send_header("request-id", f"req_{uuid.uuid4().hex[:16]}")
                self.end_headers()
                self.wfile.write(data)

            def _send_stream(self, message: dict[str, Any]) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("request-id", f"req_{uuid.uuid4().hex[:16]}")
                self.send_header("connection", "close")
                self.end_headers()
                for chunk in _message_events(message):
                    self.wfile.write(chunk)
                    self.wfile.flush()
                self.close_connection = True

            def do_GET(self) -> None:  # e.g. a model listing probe: not part of the script
                length = int(self.headers.get("content-length", "0") or 0)
                if length:
                    self.rfile.read(length)
                outer._record(Recorded(self.path, {}, {k.lower(): v for k, v in self.headers.items()},
                                       scripted=False, answer="404"))
                self._send_json(404, {"type": "error", "error": {"type": "not_found_error",
                                                                 "message": f"no route GET {self.path}"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = {"_raw": raw.decode("utf-8", "replace")}
                headers = {k.lower(): v for k, v in self.headers.items()}
                route = self.path.split("?", 1)[0].rstrip("/")
                if route.endswith("/v1/messages/count_tokens"):
                    outer._record(Recorded(self.path, body, headers, scripted=False, answer="count_tokens"))
                    self._send_json(200, {"input_tokens": max(1, len(raw) // 4)})
                    return
                if not route.endswith("/v1/messages"):
                    outer._record(Recorded(self.path, body, headers, scripted=False, answer="404"))
                    self._send_json(404, {"type": "error", "error": {"type": "not_found_error",
                                                                     "message": f"no route {self.path}"}})
                    return
                model = body.get("model") or "scripted"
                if not outer.is_agent_turn(body):
                    outer._record(Recorded(self.path, body, headers, scripted=False, answer="side"))
                    answer = turn(outer.side_reply, input_tokens=10, output_tokens=3)
                else:
                    answer = outer._next(body)
                    outer._record(Recorded(self.path, body, headers, scripted=True,
                                           answer="turn" if answer["kind"] == "turn"
                                           else f"failure {answer['status']}"))
                if answer.get("delay"):
                    time.sleep(answer["delay"])
                if answer["kind"] == "failure":
                    self._send_json(answer["status"], {"type": "error", "error": {"type": answer["error_type"],
                                                                                   "message": answer["message"]}})
                    return
                message = {"id": f"msg_{uuid.uuid4().hex[:20]}", "type": "message", "role": "assistant",
                           "model": answer.get("model") or model, "content": answer["content"],
                           "stop_reason": answer["stop_reason"], "stop_sequence": None, "usage": answer["usage"]}
                if body.get("stream"):
                    self._send_stream(message)
                else:
                    self._send_json(200, message)

        return Handler
