"""Deployment approval MCP server: two-round input_required flow (MCP 2026-07-28)."""

import json
import os

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ElicitRequest, ElicitRequestFormParams, InputRequiredResult

mcp = MCPServer("deploy-approval")

QUESTION_KEY = "question"
# stage of each pending deployment, keyed by its target
_PENDING: dict[tuple[str, str], str] = {}


def _ask(message: str, field: str, field_type: str, stage: str, service: str, environment: str) -> InputRequiredResult:
    schema = {
        "type": "object",
        "properties": {field: {"type": field_type}},
        "required": [field],
    }
    request = ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema=schema))
    _PENDING[(service, environment)] = stage
    return InputRequiredResult(input_requests={QUESTION_KEY: request}, request_state="pending")


def _answer(ctx: Context):
    responses = ctx.input_responses or {}
    response = responses.get(QUESTION_KEY)
    if response is None and responses:
        response = next(iter(responses.values()))
    return response


@mcp.tool()
async def request_deploy(service: str, environment: str, ctx: Context) -> str | InputRequiredResult:
    """Request a deployment; asks the user to confirm the target, then to approve it."""
    stage = _PENDING.pop((service, environment), None) if ctx.request_state else None

    if stage is None:
        return _ask(
            f"Confirm target: {service} in {environment}", "confirm", "boolean", "confirm", service, environment
        )

    answer = _answer(ctx)
    action = getattr(answer, "action", None)
    content = getattr(answer, "content", None) or {}

    if stage == "confirm":
        if action == "accept" and content.get("confirm") is True:
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
