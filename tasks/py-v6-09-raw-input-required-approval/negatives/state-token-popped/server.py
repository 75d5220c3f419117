"""Negative: the round is kept in server memory under a one-time token: requestState carries only a uuid, and the
entry is popped when the retry arrives. Flows never mix, but a client retry (the same answers sent
again with the same requestState) finds the token gone and starts over."""

import os
import uuid

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, ElicitRequest, ElicitRequestFormParams, ElicitResult, InputRequiredResult, TextContent

mcp = MCPServer("deploy-approval")

_STEPS: dict[str, str] = {}  # token -> the step its flow is at


def _ask(message: str, field: str, field_type: str, step: str) -> InputRequiredResult:
    schema = {"type": "object", "properties": {field: {"type": field_type}}, "required": [field]}
    token = uuid.uuid4().hex
    _STEPS[token] = step
    return InputRequiredResult(
        input_requests={"q": ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema=schema))},
        request_state=token,
    )


def _final(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=False)


@mcp.tool()
async def request_deploy(service: str, environment: str, ctx: Context) -> CallToolResult | InputRequiredResult:
    """Deploy a service after the user confirms the target and approves the deployment."""
    target = f"{service} to {environment}"
    step = _STEPS.pop(ctx.request_state, None) if ctx.request_state else None
    answer = (ctx.input_responses or {}).get("q")
    if step is None or not isinstance(answer, ElicitResult):
        return _ask(f"Confirm target: {service} in {environment}", "confirm", "boolean", "confirm")
    if step == "confirm":
        if answer.action != "accept" or (answer.content or {}).get("confirm") is not True:
            return _final(f"Deployment of {target} cancelled.")
        return _ask(f"Approve deployment of {target}?", "approver", "string", "approve")
    if answer.action == "accept":
        return _final(f"Deployment of {target} approved by {(answer.content or {}).get('approver')}.")
    return _final(f"Deployment of {target} declined.")


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
