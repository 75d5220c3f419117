"""The approval state machine, kept apart from the MCP plumbing."""

from dataclasses import dataclass

import mcp_types as types


@dataclass
class Outcome:
    ask: str | None = None  # the question to ask next ("q1" / "q2"), or None when final
    final: str | None = None  # "approved" / "declined" / "cancelled"
    approver: str = ""

    def message(self, service: str, environment: str) -> str:
        target = f"Deployment of {service} to {environment}"
        if self.final == "approved":
            return f"{target} approved by {self.approver}."
        return f"{target} {self.final}."


def decide(stage: str, answers: dict[str, types.ElicitResult]) -> Outcome:
    if stage == "q1" and "q1" in answers:
        answer = answers["q1"]
        confirmed = answer.action == "accept" and bool((answer.content or {}).get("confirm"))
        return Outcome(ask="q2") if confirmed else Outcome(final="cancelled")
    if stage == "q2" and "q2" in answers:
        answer = answers["q2"]
        if answer.action == "accept":
            return Outcome(final="approved", approver=str((answer.content or {}).get("approver", "")))
        return Outcome(final="declined")
    # first call, or a retry that did not answer the pending question: ask it (again)
    return Outcome(ask="q2" if stage == "q2" else "q1")
