"""Audit line formatting (unused), with a syntax error."""


def line(n: int, tool: str, decision: str) -> str
    return f"{n}|{tool}|{decision}"
