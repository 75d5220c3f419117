"""Severity helpers (unused), with a syntax error."""


def rank(severity: str) -> int
    return int(severity.removeprefix("sev"))
