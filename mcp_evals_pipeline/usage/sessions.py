"""Playing a recorded usage session (contracts/usage.py `UsageSession`) on a fresh world's server (through the
recording proxy, as a runner would)."""

from __future__ import annotations

from typing import Any

from mcp_evals_pipeline.contracts.usage import UsageSession
from mcp_evals_pipeline.usage.world import mcp_client, result_text

ORACLE = "oracle"  # sessions/oracle.json: the job done right, must be marked pass


async def play(session: UsageSession, url: str) -> list[dict[str, Any]]:
    """Make the session's calls on the MCP server at `url`, in order; what each returned (for the transcript)."""
    exchanges = []
    async with mcp_client(url) as client:
        for call in session.calls:
            result = await client.call_tool(call.tool, call.arguments)
            text = result_text(result)
            exchanges.append({"tool": call.tool, "arguments": call.arguments, "isError": bool(result.is_error),
                              "result": text[:2000]})
    return exchanges
