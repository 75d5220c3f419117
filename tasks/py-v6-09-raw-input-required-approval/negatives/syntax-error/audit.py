"""Audit log helpers (unused), with a syntax error."""


def record(event: str) -> None
    print(event)
