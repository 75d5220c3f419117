"""request_deploy on the SDK's low-level Server: a hand-driven input_required state machine.

The low-level tier does not seal requestState by itself, so the SDK's RequestStateBoundary
middleware is installed explicitly (MCPServer does the same by default).
"""

from __future__ import annotations

import os

import uvicorn
from mcp.server.lowlevel import Server
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp_types import (
    CallToolRequestParams,
    CallToolResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    InputRequiredResult,
    ListToolsResult,
    TextContent,
    Tool,
)

TOOL = Tool(
    name="request_deploy",
    description="Request a deployment: the user confirms the target, then an approver signs off.",
    input_schema={
        "type": "object",
        "properties": {"service": {"type": "string"}, "environment": {"type": "string"}},
        "required": ["service", "environment"],
    },
)

STEP_CONFIRM = "step:confirm"
STEP_APPROVE = "step:approve"


def ask(key: str, message: str, field: str, json_type: str, step: str) -> InputRequiredResult:
    form = ElicitRequestFormParams(
        message=message,
        requested_schema={"type": "object", "properties": {field: {"type": json_type}}, "required": [field]},
    )
    return InputRequiredResult(input_requests={key: ElicitRequest(params=form)}, request_state=step)


def text(sentence: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=sentence)])


def only_answer(params: CallToolRequestParams) -> ElicitResult | None:
    responses = params.input_responses or {}
    for value in responses.values():
        if isinstance(value, ElicitResult):
            return value
    return None


async def on_list_tools(ctx, params) -> ListToolsResult:
    return ListToolsResult(tools=[TOOL])


async def on_call_tool(ctx, params: CallToolRequestParams) -> CallToolResult | InputRequiredResult:
    if params.name != TOOL.name:
        return CallToolResult(content=[TextContent(type="text", text=f"unknown tool {params.name}")], is_error=True)
    args = params.arguments or {}
    service, environment = args.get("service"), args.get("environment")
    if not isinstance(service, str) or not isinstance(environment, str):
        return CallToolResult(
            content=[TextContent(type="text", text="service and environment must be strings")], is_error=True
        )

    step = params.request_state
    answer = only_answer(params)

    if step == STEP_CONFIRM:
        content = (answer.content or {}) if answer else {}
        if answer is None or answer.action != "accept" or content.get("confirm") is not True:
            return text(f"Deployment of {service} to {environment} cancelled.")
        return ask("approve", f"Approve deployment of {service} to {environment}?", "approver", "string", STEP_APPROVE)

    if step == STEP_APPROVE:
        if answer is not None and answer.action == "accept":
            approver = (answer.content or {}).get("approver")
            return text(f"Deployment of {service} to {environment} approved by {approver}.")
        return text(f"Deployment of {service} to {environment} declined.")

    return ask("confirm", f"Confirm target: {service} in {environment}", "confirm", "boolean", STEP_CONFIRM)


server = Server("deploy-approval", on_list_tools=on_list_tools, on_call_tool=on_call_tool)
server.middleware.append(RequestStateBoundary(RequestStateSecurity.ephemeral(), default_audience="deploy-approval"))

if __name__ == "__main__":
    uvicorn.run(server.streamable_http_app(streamable_http_path="/mcp"), host="127.0.0.1", port=int(os.environ["PORT"]))
