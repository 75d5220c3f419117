"""Alternate legitimate solution: the low-level Server API, a src/ layout, a pyproject.toml and uvicorn.

The call_tool handler returns InputRequiredResult itself and reads params.input_responses / params.request_state on
the retry. The state is plain base64 JSON (the low-level server installs no sealing middleware), and the answers
are found by the keys the handler chose for its questions.
"""

import base64
import json
import os

import mcp_types as types
import uvicorn
from approval import decide
from mcp.server.lowlevel import Server

DEPLOY_SCHEMA = {
    "type": "object",
    "properties": {"service": {"type": "string"}, "environment": {"type": "string"}},
    "required": ["service", "environment"],
}


def _encode(state: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(state).encode()).decode()


def _decode(token: str | None) -> dict:
    return json.loads(base64.urlsafe_b64decode(token.encode())) if token else {}


def _text(text: str, *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=error)


def _ask(key: str, message: str, field: str, field_type: str, state: dict) -> types.InputRequiredResult:
    schema = {"type": "object", "properties": {field: {"type": field_type}}, "required": [field]}
    question = types.ElicitRequest(params=types.ElicitRequestFormParams(message=message, requested_schema=schema))
    return types.InputRequiredResult(input_requests={key: question}, request_state=_encode(state))


async def list_tools(ctx, params) -> types.ListToolsResult:
    tool = types.Tool(name="request_deploy", description="Deploy a service after confirmation and approval",
                      input_schema=DEPLOY_SCHEMA)
    return types.ListToolsResult(tools=[tool])


async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult | types.InputRequiredResult:
    if params.name != "request_deploy":
        return _text(f"Unknown tool: {params.name}", error=True)
    args = params.arguments or {}
    service, environment = args.get("service"), args.get("environment")
    if not isinstance(service, str) or not isinstance(environment, str):
        return _text("service and environment are required strings", error=True)
    state = _decode(params.request_state)
    answers = {k: v for k, v in (params.input_responses or {}).items() if isinstance(v, types.ElicitResult)}
    outcome = decide(state.get("stage", "start"), answers)
    if outcome.ask == "q1":
        return _ask("q1", f"Confirm target: {service} in {environment}", "confirm", "boolean", {"stage": "q1"})
    if outcome.ask == "q2":
        return _ask("q2", f"Approve deployment of {service} to {environment}?", "approver", "string", {"stage": "q2"})
    return _text(outcome.message(service, environment))


server = Server("deploy-approval-lowlevel", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)

if __name__ == "__main__":
    app = server.streamable_http_app(streamable_http_path="/mcp", host="0.0.0.0")
    uvicorn.run(app, host="0.0.0.0", port=int(os.environ["PORT"]), log_level="warning")
