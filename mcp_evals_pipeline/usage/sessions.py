"""Playing a recorded usage session (contracts/usage.py `UsageSession`) on a fresh world's server."""

from __future__ import annotations

from typing import Any

from mcp_evals_pipeline.contracts.usage import UsageSession
from mcp_evals_pipeline.usage.world import World, mcp_client, result_text

ORACLE = "oracle"  # sessions/oracle.json: the job done right, must be marked pass


async def play(session: UsageSession, world: World) -> list[dict[str, Any]]:
    """Make the session's calls on the world's server, in order; what each returned (for the transcript)."""
    exchanges = []
    async with mcp_client(world.url) as client:
        for call in session.calls:
            result = await client.call_tool(call.tool, call.arguments)
            text = result_text(result)
            exchanges.append({"tool": call.tool, "arguments": call.arguments, "isError": bool(result.is_error),
                              "result": text[:2000]})
    return exchanges
