"""Formatting helpers (unused), with a syntax error."""


def cents(value: int) -> str
    return f"{value / 100:.2f}"
