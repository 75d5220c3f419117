"""Evaluating contract expectations against what the server returned."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import mcp_types as types

from mcp_evals_pipeline.contracts.task import Expectation
from mcp_evals_pipeline.contracts.task_base import json_type_matches, json_type_of

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


def _json_number(value: Any) -> float | None:
    """A JSON number as a float; a string, a boolean or anything else is not a number (exact JSON types)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _at_path(data: Any, path: str) -> Any:
    if path == "$":
        return data
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


def value_at(path: str, text: str, structured: Any) -> Any:
    """The JSON value at `path`: in the structured content first, else in the text parsed as JSON; _MISSING if none."""
    for source in (structured, _json_or_missing(text)):
        if source is None or source is _MISSING:
            continue
        found = _at_path(source, path)
        if found is not _MISSING:
            return found
    return _MISSING


def extract_number(exp: Expectation, text: str, structured: Any) -> float | None:
    if exp.path:
        return _json_number(value_at(exp.path, text, structured))
    if isinstance(structured, dict) and "result" in structured:
        return _json_number(structured["result"])
    parsed = _json_or_missing(text.strip())
    if parsed is not _MISSING and (isinstance(parsed, bool) or not isinstance(parsed, int | float)):
        # JSON text that is not a bare number ("\"42\"", {"sum": "42"}): only a number in it counts, not a string
        return _first_json_number(parsed)
    match = _NUMBER.search(text)
    return float(match.group()) if match else None


def _first_json_number(data: Any) -> float | None:
    """The first JSON number in a decoded value (depth first, in order); strings are never read as numbers."""
    if isinstance(data, dict):
        data = list(data.values())
    if isinstance(data, list):
        for item in data:
            found = _first_json_number(item)
            if found is not None:
                return found
        return None
    return _json_number(data)


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def expectation_failure(exp: Expectation, text: str, structured: Any = None) -> str | None:
    """None when the expectation holds, else why not."""
    where = f" at path {exp.path!r}" if exp.path else ""
    if exp.type == "number-equals":
        got = extract_number(exp, text, structured)
        want = float(exp.value)
        if got is not None and math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-9):
            return None
        if exp.path and (raw := value_at(exp.path, text, structured)) is not _MISSING and got is None:
            return f"expected the number {exp.value}{where}, found {json_type_of(raw)} {clip(_as_text(raw), 60)}"
        return f"expected the number {exp.value}{where}, found {_fmt_number(got)}"
    if exp.type in ("equals", "json-type"):
        assert exp.path is not None
        found = value_at(exp.path, text, structured)
        if found is _MISSING:
            return f"no JSON value{where}"
        if exp.type == "json-type":
            ok = json_type_matches(found, exp.value)
            return None if ok else f"expected a JSON {exp.value}{where}, found {json_type_of(found)}"
        if found == exp.value and json_type_of(found) == json_type_of(exp.value):
            return None
        return f"expected {json.dumps(exp.value)}{where}, found {clip(json.dumps(found), 120)}"
    if exp.path:
        found = value_at(exp.path, text, structured)
        if found is _MISSING:
            return f"no JSON value{where}"
        text = _as_text(found)
    haystack, needle = (text, str(exp.value)) if exp.case_sensitive else (text.casefold(), str(exp.value).casefold())
    if exp.type == "contains":
        return None if needle in haystack else f"does not contain {exp.value!r}{where}"
    return None if needle not in haystack else f"contains {exp.value!r}{where}, which it must not"


def _fmt_number(value: float | None) -> str:
    if value is None:
        return "none"
    return str(int(value)) if value.is_integer() else str(value)


def schema_types(schema: Any) -> set[str]:
    """The JSON types a JSON Schema property admits (its `type`, or those of its anyOf/oneOf branches)."""
    if not isinstance(schema, dict):
        return set()
    declared = schema.get("type")
    types_ = {declared} if isinstance(declared, str) else set(declared or [])
    for key in ("anyOf", "oneOf", "allOf"):
        for branch in schema.get(key) or []:
            types_ |= schema_types(branch)
    if "enum" in schema and not types_:
        types_ = {"string"} if all(isinstance(v, str) for v in schema["enum"]) else types_
    return {t for t in types_ if isinstance(t, str)}


def declared_type_ok(declared: set[str], wanted: str) -> bool:
    """Does a property declaring `declared` (ignoring "null": optional is not the point) ask for `wanted`? An
    integer may be declared "integer"; a number "number" or "integer"; nothing else may ride along (a property
    that also admits "string" invites exactly the coercion the prompt rules out)."""
    declared = declared - {"null"}
    if not declared:
        return False
    if wanted == "number":
        return declared <= {"number", "integer"}
    return declared == {wanted}


def describe(exp: Expectation) -> str:
    return json.dumps(exp.model_dump(by_alias=True, exclude_defaults=True), separators=(",", ":"))


def clip(text: str, limit: int = 200) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[: limit - 3] + "..."
