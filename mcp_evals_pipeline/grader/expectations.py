"""Evaluating contract expectations against what the server returned."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import mcp_types as types

from mcp_evals_pipeline.contracts.task import Expectation

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_MISSING = object()


def tool_result_text(result: types.CallToolResult) -> str:
    """The text a client sees: text contents joined; the structured content's JSON when there is no text."""
    texts = [c.text for c in result.content if isinstance(c, types.TextContent)]
    if texts:
        return "\n".join(texts)
    if result.structured_content is not None:
        return json.dumps(result.structured_content)
    return ""


def resource_text(result: types.ReadResourceResult) -> str:
    parts = []
    for content in result.contents:
        if isinstance(content, types.TextResourceContents):
            parts.append(content.text)
        else:
            parts.append(f"<blob {len(getattr(content, 'blob', '') or '')} base64 chars>")
    return "\n".join(parts)


def _as_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def _at_path(data: Any, path: str) -> Any:
    for part in path.split("."):
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and part.lstrip("-").isdigit() and -len(data) <= int(part) < len(data):
            data = data[int(part)]
        else:
            return _MISSING
    return data


def _json_or_missing(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, TypeError):
        return _MISSING


def extract_number(exp: Expectation, text: str, structured: Any) -> float | None:
    if exp.path:
        for source in (structured, _json_or_missing(text)):
            if source is None or source is _MISSING:
                continue
            found = _at_path(source, exp.path)
            if found is not _MISSING:
                return _as_number(found)
        return None
    if isinstance(structured, dict) and "result" in structured and _as_number(structured["result"]) is not None:
        return _as_number(structured["result"])
    match = _NUMBER.search(text)
    return float(match.group()) if match else None


def expectation_failure(exp: Expectation, text: str, structured: Any = None) -> str | None:
    """None when the expectation holds, else why not."""
    if exp.type == "number-equals":
        got = extract_number(exp, text, structured)
        want = float(exp.value)
        if got is not None and math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-9):
            return None
        where = f" at path {exp.path!r}" if exp.path else ""
        return f"expected the number {exp.value}{where}, found {_fmt_number(got)}"
    haystack, needle = (text, str(exp.value)) if exp.case_sensitive else (text.casefold(), str(exp.value).casefold())
    if exp.type == "contains":
        return None if needle in haystack else f"does not contain {exp.value!r}"
    return None if needle not in haystack else f"contains {exp.value!r}, which it must not"


def _fmt_number(value: float | None) -> str:
    if value is None:
        return "none"
    return str(int(value)) if value.is_integer() else str(value)


def describe(exp: Expectation) -> str:
    return json.dumps(exp.model_dump(by_alias=True, exclude_defaults=True), separators=(",", ":"))


def clip(text: str, limit: int = 200) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[: limit - 3] + "..."
