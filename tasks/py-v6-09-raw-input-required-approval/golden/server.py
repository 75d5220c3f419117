"""Golden solution: a two-round deployment approval with the raw input_required helpers of the mcp 2.3 SDK.

The tool returns InputRequiredResult to ask; on the retry it reads ctx.input_responses (the answers to the latest
round only) and ctx.request_state (what it carried over from the earlier rounds).
"""

import json
import os

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import (
    CallToolResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    InputRequiredResult,
    TextContent,
)

mcp = MCPServer("deploy-approval")


def _form(message: str, field: str, field_type: str) -> ElicitRequest:
    schema = {"type": "object", "properties": {field: {"type": field_type}}, "required": [field]}
    return ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema=schema))


def _final(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=False)


def _answer(ctx: Context, key: str) -> ElicitResult | None:
    answer = (ctx.input_responses or {}).get(key)
    return answer if isinstance(answer, ElicitResult) else None


@mcp.tool()
async def request_deploy(service: str, environment: str, ctx: Context) -> CallToolResult | InputRequiredResult:
    """Deploy a service after the user confirms the target and approves the deployment."""
    target = f"{service} to {environment}"
    state = json.loads(ctx.request_state) if ctx.request_state else {"step": "confirm"}

    if state["step"] == "confirm":
        answer = _answer(ctx, "confirm")
        if answer is None:  # first call: ask round 1
            return InputRequiredResult(
                input_requests={"confirm": _form(f"Confirm target: {service} in {environment}", "confirm", "boolean")},
                request_state=json.dumps({"step": "confirm"}),
            )
        if answer.action != "accept" or not (answer.content or {}).get("confirm"):
            return _final(f"Deployment of {target} cancelled.")
        return InputRequiredResult(
            input_requests={"approval": _form(f"Approve deployment of {target}?", "approver", "string")},
            request_state=json.dumps({"step": "approve"}),
        )

    answer = _answer(ctx, "approval")
    if answer is None:  # a retry without the round-2 answer: ask again
        return InputRequiredResult(
            input_requests={"approval": _form(f"Approve deployment of {target}?", "approver", "string")},
            request_state=json.dumps({"step": "approve"}),
        )
    if answer.action == "accept":
        approver = str((answer.content or {}).get("approver") or "unknown")
        return _final(f"Deployment of {target} approved by {approver}.")
    return _final(f"Deployment of {target} declined.")


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
