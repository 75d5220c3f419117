"""The audit trail and the approval policy as a middleware object (an async __call__)."""

from dataclasses import dataclass, field
from typing import Any


@dataclass
class AuditTrail:
    entries: list[tuple[str, str]] = field(default_factory=list)

    def record(self, tool: str, decision: str) -> None:
        self.entries.append((tool, decision))

    def render(self) -> str:
        return "\n".join(f"{n}|{tool}|{decision}" for n, (tool, decision) in enumerate(self.entries, start=1))


class ApprovalGate:
    """Protocol middleware: refuses protected tools without the approval code and audits every tools/call."""

    def __init__(self, trail: AuditTrail, protected: dict[str, str]):
        self.trail = trail
        self.protected = protected  # tool name -> required approval code

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        if ctx.method == "tools/call":
            name = str((ctx.params or {}).get("name"))
            args = (ctx.params or {}).get("arguments") or {}
            required = self.protected.get(name)
            if required is not None and args.get("approvalCode") != required:
                self.trail.record(name, "denied")
                # The wire form of a CallToolResult: a tool error, not a JSON-RPC error.
                return {"content": [{"type": "text", "text": f"Approval required: {name} was refused"}],
                        "isError": True}
            self.trail.record(name, "allowed")
        return await call_next(ctx)
