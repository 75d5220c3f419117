"""Negative: asks the confirmation and the approval in one round (one form with both fields), then answers.

Round 1 looks right, but the final result comes back where the prompt asks for round 2, the approval.
"""

import json
import os

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, ElicitRequest, ElicitRequestFormParams, ElicitResult, InputRequiredResult, TextContent

mcp = MCPServer("deploy-approval")


@mcp.tool()
async def request_deploy(service: str, environment: str, ctx: Context) -> CallToolResult | InputRequiredResult:
    """Deploy a service after one combined confirmation."""
    target = f"{service} to {environment}"
    answer = (ctx.input_responses or {}).get("deploy")
    if not isinstance(answer, ElicitResult):
        schema = {
            "type": "object",
            "properties": {"confirm": {"type": "boolean"}, "approver": {"type": "string"}},
            "required": ["confirm"],
        }
        question = ElicitRequest(params=ElicitRequestFormParams(
            message=f"Confirm target: {service} in {environment}", requested_schema=schema))
        return InputRequiredResult(input_requests={"deploy": question}, request_state=json.dumps({}))
    content = answer.content or {}
    if answer.action != "accept" or not content.get("confirm"):
        text = f"Deployment of {target} cancelled."
    else:
        text = f"Deployment of {target} approved by {content.get('approver') or 'the requester'}."
    return CallToolResult(content=[TextContent(type="text", text=text)])


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
