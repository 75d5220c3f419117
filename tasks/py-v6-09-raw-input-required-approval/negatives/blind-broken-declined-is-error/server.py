"""Deployment approval server built around an explicit round table.

Each round is described once (key, message template, field, JSON type); the tool body
walks the table, carrying the round number forward in the opaque requestState.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, ElicitResult, InputRequiredResult, TextContent


@dataclass(frozen=True)
class Round:
    key: str
    template: str
    field: str
    json_type: str

    def ask(self, service: str, environment: str, state: str) -> InputRequiredResult:
        return InputRequiredResult(
            input_requests={
                self.key: {
                    "method": "elicitation/create",
                    "params": {
                        "mode": "form",
                        "message": self.template.format(service=service, environment=environment),
                        "requestedSchema": {
                            "type": "object",
                            "properties": {self.field: {"type": self.json_type, "title": self.field}},
                            "required": [self.field],
                        },
                    },
                }
            },
            request_state=state,
        )


CONFIRM = Round("confirm_target", "Confirm target: {service} in {environment}", "confirm", "boolean")
APPROVE = Round("approval", "Approve deployment of {service} to {environment}?", "approver", "string")


def final(text: str, failed: bool = False) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=failed)


def reply_for(ctx: Context, rnd: Round) -> ElicitResult | None:
    responses = ctx.input_responses or {}
    reply = responses.get(rnd.key)
    return reply if isinstance(reply, ElicitResult) else None


async def request_deploy(service: str, environment: str, ctx: Context) -> CallToolResult | InputRequiredResult:
    """Deploy `service` to `environment` after the user confirms the target and approves it."""
    target = f"{service} to {environment}"
    state = ctx.request_state or ""

    if state == "awaiting-confirm":
        reply = reply_for(ctx, CONFIRM)
        confirmed = (
            reply is not None and reply.action == "accept" and (reply.content or {}).get("confirm") is True
        )
        if not confirmed:
            return final(f"Deployment of {target} cancelled.")
        return APPROVE.ask(service, environment, "awaiting-approval")

    if state == "awaiting-approval":
        reply = reply_for(ctx, APPROVE)
        if reply is not None and reply.action == "accept":
            approver = (reply.content or {}).get("approver")
            return final(f"Deployment of {target} approved by {approver}.")
        return final(f"Deployment of {target} declined.", failed=True)

    return CONFIRM.ask(service, environment, "awaiting-confirm")


server = MCPServer("deploy-approval", instructions="Deployments need a confirmed target and an approver.")
server.add_tool(request_deploy, name="request_deploy")


def main() -> None:
    port = int(os.environ["PORT"])
    server.run("streamable-http", host="0.0.0.0", port=port, streamable_http_path="/mcp")


if __name__ == "__main__":
    main()
