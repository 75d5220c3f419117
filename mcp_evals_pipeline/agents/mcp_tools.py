"""A usage task's tools for a model: the server under evaluation's tools, listed and called through the real
`mcp` client, with the interface of agents/tools.ToolExecutor (`execute(name, arguments, call_id) -> str`,
`calls`), so a runner's loop is the same for both kinds of task. Every call and result goes to transcript.jsonl.

The client lives in a blocking portal (an event loop in a thread of its own): the runners' loops are synchronous.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from anyio.from_thread import start_blocking_portal

from mcp_evals_pipeline.agents.base import TranscriptWriter
from mcp_evals_pipeline.usage.world import mcp_client, result_text

SYSTEM_PROMPT = """\
You are an assistant that acts for the user on their operations platform, through the tools you are given (and
nothing else). Do what the user asks: look up what you need, make the changes they asked for and no others, and
finish with a short reply to the user saying what you did or found."""
RESULT_CHARS = 8000


class McpToolExecutor:
    def __init__(self, client: Any, portal: Any, tools: list[Any], transcript: TranscriptWriter):
        self._client, self._portal, self._transcript = client, portal, transcript
        self.calls = 0
        self.schemas = [{"type": "function", "function": {
            "name": t.name, "description": t.description or "", "parameters": t.input_schema or {"type": "object"}}}
            for t in tools]

    def execute(self, name: str, arguments: str | dict[str, Any] | None, call_id: str | None = None) -> str:
        """One tool call on the server; what the model reads back (errors included, never raised)."""
        try:
            args = json.loads(arguments) if isinstance(arguments, str) else dict(arguments or {})
            if not isinstance(args, dict):
                raise ValueError("the arguments are not a JSON object")
        except ValueError as exc:
            text = f"ERROR: the arguments of {name} are not a JSON object: {exc}"
            self._transcript.emit("tool_result", tool=name, call_id=call_id, text=text, exit_code=1)
            return text
        self._transcript.emit("tool_call", tool=name, call_id=call_id, args=args)
        self.calls += 1
        try:
            result = self._portal.call(self._client.call_tool, name, args)
            text = result_text(result)[:RESULT_CHARS]
            failed = bool(result.is_error)
        except Exception as exc:  # an unknown tool, a protocol error: the model reads it, as from a real client
            text, failed = f"{type(exc).__name__}: {exc}", True
        text = f"ERROR: {text}" if failed else text
        self._transcript.emit("tool_result", tool=name, call_id=call_id, text=text, exit_code=1 if failed else 0)
        return text


@contextmanager
def mcp_tools(url: str, transcript: TranscriptWriter) -> Iterator[McpToolExecutor]:
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(mcp_client(url)) as client:
        tools = portal.call(client.list_tools).tools
        yield McpToolExecutor(client, portal, tools, transcript)
