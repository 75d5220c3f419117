"""A local OpenAI-compatible HTTP server for tests: real HTTP, real `openai` client, scripted answers.

    with ScriptedOpenAI([reply(content="hi"), reply(tool_calls=[call("shell", {"command": "ls"})]),
                         failure(500)]) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test-key")

Every request body is recorded in `server.requests` (what the code under test really sent). When the script runs
out, the server answers 500 with a message saying so, so a test never hangs on a missing answer.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = dict[str, Any]


def reply(content: str | None = None, tool_calls: list[dict[str, Any]] | None = None,
          prompt_tokens: int = 100, completion_tokens: int = 20, delay_s: float = 0.0) -> Answer:
    """An answer; `delay_s`: how long the model "thinks" first (requests are answered side by side)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {"kind": "reply", "message": message, "usage": (prompt_tokens, completion_tokens),
            "finish_reason": "tool_calls" if tool_calls else "stop", "delay": delay_s}


def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": f"call_{uuid.uuid4().hex[:12]}", "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)}}


def failure(status: int, message: str = "scripted failure", delay_s: float = 0.0) -> Answer:
    return {"kind": "failure", "status": status, "message": message, "delay": delay_s}


def stall(seconds: float = 60.0) -> Answer:
    """A hung endpoint: no answer for `seconds` (then a 500), so the client's request timeout fires first however
    slow the machine. Released as soon as the server closes: a test never waits it out."""
    return {"kind": "stall", "seconds": seconds}


class ScriptedOpenAI:
    def __init__(self, script: list[Answer] | Callable[[dict[str, Any]], Answer]):
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> ScriptedOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()

    def _next(self, body: dict[str, Any]) -> Answer:
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
            def log_message(self, *args: object) -> None:
                pass

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                outer.headers.append({k.lower(): v for k, v in self.headers.items()})
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                answer = outer._next(body)
                if answer["kind"] == "stall":
                    outer._closing.wait(answer["seconds"])
                    with contextlib.suppress(OSError):  # the client gave up long ago
                        self._send(500, {"error": {"message": "stalled", "type": "server_error"}})
                    return
                if answer["kind"] == "failure":
                    time.sleep(answer["delay"])
                    self._send(answer["status"], {"error": {"message": answer["message"], "type": "server_error"}})
                    return
                prompt_tokens, completion_tokens = answer["usage"]
                outer._closing.wait(answer.get("delay", 0.0))
                self._send(200, {
                    "id": f"chatcmpl-{uuid.uuid4().hex[:12]}", "object": "chat.completion",
                    "created": int(time.time()), "model": body.get("model", "scripted"),
                    "choices": [{"index": 0, "message": answer["message"], "finish_reason": answer["finish_reason"]}],
                    "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                              "total_tokens": prompt_tokens + completion_tokens},
                })

        return Handler
