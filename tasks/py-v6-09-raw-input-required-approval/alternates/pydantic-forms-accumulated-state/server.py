"""Alternate legitimate solution: MCPServer with question schemas generated from pydantic models, every answer so
far accumulated in requestState, answers read from whatever key the client used, and a 0.0.0.0 listener."""

import json
import os
from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, ElicitRequest, ElicitRequestFormParams, ElicitResult, InputRequiredResult, TextContent
from pydantic import BaseModel, Field

mcp = MCPServer("deploy-approval-forms")


class ConfirmForm(BaseModel):
    confirm: bool = Field(description="Deploy to this target?")


class ApprovalForm(BaseModel):
    approver: str = Field(description="Who approves this deployment")


def _question(message: str, form: type[BaseModel]) -> ElicitRequest:
    schema = form.model_json_schema()
    schema = {"type": "object", "properties": schema["properties"], "required": schema.get("required", [])}
    return ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema=schema))


def _done(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)])


@mcp.tool()
async def request_deploy(
    service: Annotated[str, Field(description="Service to deploy")],
    environment: Annotated[str, Field(description="Target environment")],
    ctx: Context,
) -> CallToolResult | InputRequiredResult:
    """Ask for a confirmation of the target, then an approval, then report the outcome."""
    history: list[dict] = json.loads(ctx.request_state) if ctx.request_state else []
    # The retry carries the answer to the latest question only; append it to what requestState remembers.
    for answer in (ctx.input_responses or {}).values():
        if isinstance(answer, ElicitResult):
            history.append({"action": answer.action, "content": answer.content or {}})

    def ask(message: str, form: type[BaseModel]) -> InputRequiredResult:
        return InputRequiredResult(input_requests={f"q{len(history) + 1}": _question(message, form)},
                                   request_state=json.dumps(history))

    if not history:
        return ask(f"Confirm target: {service} in {environment}", ConfirmForm)
    first = history[0]
    if first["action"] != "accept" or first["content"].get("confirm") is not True:
        return _done(f"Deployment of {service} to {environment} cancelled.")
    if len(history) == 1:
        return ask(f"Approve deployment of {service} to {environment}?", ApprovalForm)
    second = history[1]
    if second["action"] == "accept":
        return _done(f"Deployment of {service} to {environment} approved by {second['content'].get('approver')}.")
    return _done(f"Deployment of {service} to {environment} declined.")


if __name__ == "__main__":
    mcp.run("streamable-http", host="0.0.0.0", port=int(os.environ.get("PORT", "8000")))
