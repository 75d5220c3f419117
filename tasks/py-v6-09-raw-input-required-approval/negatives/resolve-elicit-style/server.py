"""Negative: a working approval flow built with the SDK's Resolve/Elicit resolvers instead of the raw helpers.

On protocol 2026-07-28 the SDK turns the resolvers into input_required rounds by itself, so the wire behaviour
is right; but the prompt asks for the raw helpers and says the source must use them, and this source never does.
"""

import os
from typing import Annotated

from mcp.server.mcpserver import AcceptedElicitation, CancelledElicitation, Context, Elicit, ElicitationResult, MCPServer, Resolve
from pydantic import BaseModel

mcp = MCPServer("deploy-approval")


class Confirm(BaseModel):
    confirm: bool


class Approval(BaseModel):
    approver: str


def ask_confirm(service: str, environment: str) -> Elicit[Confirm]:
    return Elicit(f"Confirm target: {service} in {environment}", Confirm)


def ask_approval(
    service: str,
    environment: str,
    confirmed: Annotated[ElicitationResult[Confirm], Resolve(ask_confirm)],
) -> Elicit[Approval] | ElicitationResult[Approval]:
    if not (isinstance(confirmed, AcceptedElicitation) and confirmed.data.confirm):
        return CancelledElicitation()  # not confirmed: no round 2 (the tool reports "cancelled")
    return Elicit(f"Approve deployment of {service} to {environment}?", Approval)


@mcp.tool()
async def request_deploy(
    service: str,
    environment: str,
    ctx: Context,
    confirmed: Annotated[ElicitationResult[Confirm], Resolve(ask_confirm)],
    approval: Annotated[ElicitationResult[Approval], Resolve(ask_approval)],
) -> str:
    """Deploy a service after the user confirms the target and approves the deployment."""
    target = f"{service} to {environment}"
    if not (isinstance(confirmed, AcceptedElicitation) and confirmed.data.confirm):
        return f"Deployment of {target} cancelled."
    if isinstance(approval, AcceptedElicitation):
        return f"Deployment of {target} approved by {approval.data.approver}."
    return f"Deployment of {target} declined."


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
