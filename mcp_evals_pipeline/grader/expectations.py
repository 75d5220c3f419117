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


def text_content(result: types.CallToolResult) -> str | None:
    """The result's text contents joined by newlines; None when it has no text content at all."""
    texts = [c.text for c in result.content if isinstance(c, types.TextContent)]
    return "\n".join(texts) if texts else None


_SAME: Any = object()  # text_part not given: the text is the text content (a resource read's, an error message)


def expectation_failure(exp: Expectation, text: str, structured: Any = None, *, text_part: Any = _SAME) -> str | None:
    """None when the expectation holds, else why not. `text` is what a client sees (tool_result_text),
    `structured` the structured content, `text_part` the text content alone (None: the result has none)."""
    part = text if text_part is _SAME else text_part
    if exp.type == "parts-agree":
        return _disagreement(part, structured)
    if exp.source == "structured":
        if structured is None:
            return None if exp.if_present else "no structured content"
        text, within = json.dumps(structured, ensure_ascii=False), " in the structured content"
    elif exp.source == "text":
        if part is None:
            return None if exp.if_present else "no text content"
        text, structured, within = part, None, " in the text content"
    else:
        within = ""
    why = _each_failure(exp, text, structured)
    return why + within if why else None


def _disagreement(text: str | None, structured: Any) -> str | None:
    """With both parts present: is the text the JSON of the structured content?"""
    if text is None or structured is None:
        return None
    parsed = _json_or_missing(text)
    if parsed is _MISSING:
        return f"the text {clip(json.dumps(text), 80)} is not JSON, but the result has structured content too"
    if parsed == structured and _same_types(parsed, structured):
        return None
    return (f"the text holds {clip(json.dumps(parsed), 100)}, the structured content "
            f"{clip(json.dumps(structured), 100)}")


def _same_types(a: Any, b: Any) -> bool:
    """== ignores JSON types (1 == 1.0 == True): the two parts must agree on them too."""
    if json_type_of(a) != json_type_of(b):
        return False
    if isinstance(a, dict):
        return all(_same_types(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return all(_same_types(x, y) for x, y in zip(a, b, strict=True))
    return True


def _each_failure(exp: Expectation, text: str, structured: Any) -> str | None:
    """A path with `*` segments: the expectation at every path it expands to (the first failure)."""
    if not exp.path or "*" not in exp.path.split("."):
        return _failure(exp, text, structured)
    source = structured if structured is not None else _json_or_missing(text)
    paths = _expand(source, exp.path.split(".")) if source is not _MISSING else None
    if paths is None:
        return f"no JSON value at path {exp.path!r}"
    for path in paths:
        why = _failure(exp.model_copy(update={"path": path}), text, structured)
        if why:
            return why
    return None


def _expand(data: Any, parts: list[str], done: str = "") -> list[str] | None:
    """The concrete paths a path with `*` segments reaches in data; None when a part before a `*` is missing
    (the paths after the last `*` are checked by the expectation itself, which names what is missing)."""
    if "*" not in parts:
        return [".".join(p for p in (done, *parts) if p)]
    star = parts.index("*")
    prefix = ".".join(parts[:star])
    found = _at_path(data, prefix) if prefix else data
    if found is _MISSING or not isinstance(found, list | dict):
        return None
    keys = [str(i) for i in range(len(found))] if isinstance(found, list) else list(found)
    base = ".".join(p for p in (done, prefix) if p)
    out: list[str] = []
    for key in keys:
        item = _at_path(found, key)
        more = _expand(item, parts[star + 1:], f"{base}.{key}" if base else key)
        if more is None:
            return None
        out += more
    return out


def _failure(exp: Expectation, text: str, structured: Any) -> str | None:
    where = f" at path {exp.path!r}" if exp.path else ""
    if exp.type == "number-equals":
        got = extract_number(exp, text, structured)
        want = float(exp.value)
        if got is not None and math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-9):
            return None
        if exp.path and (raw := value_at(exp.path, text, structured)) is not _MISSING and got is None:
            return f"expected the number {exp.value}{where}, found {json_type_of(raw)} {clip(_as_text(raw), 60)}"
        return f"expected the number {exp.value}{where}, found {_fmt_number(got)}"
    if exp.type == "text-equals":
        got, want = text.strip(), exp.value
        if got == want or (not exp.sensitive and got.casefold() == want.casefold()):
            return None
        return f"expected the text to be exactly {json.dumps(want)}, found {clip(json.dumps(got), 120)}"
    if exp.type in ("equals", "one-of", "json-type", "sorted", "length-equals"):
        assert exp.path is not None
        found = value_at(exp.path, text, structured)
        if found is _MISSING:
            return f"no JSON value{where}"
        if exp.type == "json-type":
            ok = json_type_matches(found, exp.value)
            return None if ok else f"expected a JSON {exp.value}{where}, found {json_type_of(found)}"
        if exp.type == "sorted":
            return _order_failure(exp, found, where)
        if exp.type == "length-equals":
            return _length_failure(exp, found, where, text, structured)
        wanted = exp.value if exp.type == "one-of" else [exp.value]
        if any(found == want and json_type_of(found) == json_type_of(want) for want in wanted):
            return None
        said = json.dumps(exp.value) if exp.type == "equals" else "one of " + ", ".join(map(json.dumps, wanted))
        return f"expected {said}{where}, found {clip(json.dumps(found), 120)}"
    if exp.path:
        found = value_at(exp.path, text, structured)
        if found is _MISSING:
            return f"no JSON value{where}"
        text = _as_text(found)
    sensitive = exp.sensitive
    haystack, needle = (text, str(exp.value)) if sensitive else (text.casefold(), str(exp.value).casefold())
    if exp.type == "contains":
        return None if needle in haystack else f"does not contain {exp.value!r}{where}"
    return None if needle not in haystack else f"contains {exp.value!r}{where}, which it must not"


def _order_failure(exp: Expectation, found: Any, where: str) -> str | None:
    """Is the array ordered by exp.key (numbers with numbers, strings with strings), ties allowed?"""
    if not isinstance(found, list):
        return f"expected an array{where}, found {json_type_of(found)}"
    by = f" by {exp.key!r}" if exp.key else ""
    keys = []
    for i, item in enumerate(found):
        if exp.key is not None:
            if not isinstance(item, dict) or exp.key not in item:
                return f"item {i}{where} has no {exp.key!r} to order by"
            item = item[exp.key]
        keys.append(item)
    kinds = {"number" if _json_number(k) is not None else json_type_of(k) for k in keys}
    if not kinds <= {"number"} and not kinds <= {"string"}:
        return f"the items{where} cannot be ordered{by}: the values are {', '.join(sorted(kinds))}"
    descending = exp.order == "descending"
    for i in range(1, len(keys)):
        if (keys[i] > keys[i - 1]) if descending else (keys[i] < keys[i - 1]):
            return (f"not in {exp.order} order{by}{where}: {clip(json.dumps(keys[i]), 40)} comes after "
                    f"{clip(json.dumps(keys[i - 1]), 40)} (item {i})")
    return None


def _length_failure(exp: Expectation, found: Any, where: str, text: str, structured: Any) -> str | None:
    """Has the array as many items as the value, or as the JSON integer at valuePath says?"""
    if not isinstance(found, list):
        return f"expected an array{where}, found {json_type_of(found)}"
    want, said = exp.value, ""
    if exp.value_path is not None:
        want = value_at(exp.value_path, text, structured)
        if want is _MISSING:
            return f"no JSON value at path {exp.value_path!r} to compare the length{where} with"
        if json_type_of(want) != "integer" or isinstance(want, bool):
            return f"expected a JSON integer at path {exp.value_path!r}, found {json_type_of(want)} " \
                   f"{clip(json.dumps(want), 40)}"
        said = f" (the {exp.value_path!r} it states)"
    if len(found) == want:
        return None
    return f"expected {_fmt_number(float(want))} items{where}{said}, found {len(found)}"


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
    shown = exp.model_dump(by_alias=True, exclude_defaults=True)
    if "value" in exp.model_fields_set:  # `"value": null` is a value (equals null), not a default to leave out
        shown["value"] = exp.value
    return json.dumps(shown, separators=(",", ":"))


def clip(text: str, limit: int = 200) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[: limit - 3] + "..."
