"""Deployment approval MCP server: two-round input_required flow (MCP 2026-07-28)."""

import json
import os

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ElicitRequest, ElicitRequestFormParams, InputRequiredResult

mcp = MCPServer("deploy-approval")

QUESTION_KEY = "question"


def _ask(message: str, field: str, field_type: str, stage: str, service: str, environment: str) -> InputRequiredResult:
    schema = {
        "type": "object",
        "properties": {field: {"type": field_type}},
        "required": [field],
    }
    request = ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema=schema))
    state = json.dumps({"stage": stage, "service": service, "environment": environment})
    return InputRequiredResult(input_requests={QUESTION_KEY: request}, request_state=state)


def _answer(ctx: Context):
    responses = ctx.input_responses or {}
    response = responses.get(QUESTION_KEY)
    if response is None and responses:
        response = next(iter(responses.values()))
    return response


@mcp.tool()
async def request_deploy(service: str, environment: str, ctx: Context) -> str | InputRequiredResult:
    """Request a deployment; asks the user to confirm the target, then to approve it."""
    raw_state = ctx.request_state
    state = json.loads(raw_state) if raw_state else None
    stage = state.get("stage") if isinstance(state, dict) else None

    if stage is None:
        return _ask(
            f"Confirm target: {service} in {environment}", "confirm", "boolean", "confirm", service, environment
        )

    answer = _answer(ctx)
    action = getattr(answer, "action", None)
    content = getattr(answer, "content", None) or {}

    if stage == "confirm":
        if action == "accept" and "confirm" in content:
            return _ask(
                f"Approve deployment of {service} to {environment}?",
                "approver",
                "string",
                "approve",
                service,
                environment,
            )
        return f"Deployment of {service} to {environment} cancelled."

    if stage == "approve":
        if action == "accept":
            approver = content.get("approver")
            return f"Deployment of {service} to {environment} approved by {approver}."
        return f"Deployment of {service} to {environment} declined."

    # Unknown stage: start over.
    return _ask(f"Confirm target: {service} in {environment}", "confirm", "boolean", "confirm", service, environment)


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
