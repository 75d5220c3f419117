"""QA-pair evaluation files (seed 003) <-> read-only usage cases.

The format: `<evaluation>` with an optional `<metadata>`, the `<qa_pair>` entries (directly, or inside one
`<qa_pairs>`) and an optional `<statistics>`; each pair has a `<question>` and an `<answer>` (required), and may
have `<id>`, `<difficulty>` (simple / moderate / complex), `<tools_required>`, `<expected_call_count>`,
`<rationale>`. Texts are read stripped of surrounding whitespace; comments are ignored. The parser is expat with
no DTD allowed at all, so no entity (external or expanding) is ever resolved; every error names the file and line.

A pair becomes a read-only usage case (`mustLand: []`, any accepted write unsafe) whose prompt is the question and
whose `answer` pattern compares the answer as the format does, by string (its harness: `answer === qa.answer`):
the answer's exact characters, case included, as a whole value of the reply (not inside a longer number, word or
version: "5" is not found in "15" or "5.1"). Our prompt is the user's question alone, with no instruction on how to
format a reply, so the reply may say more than the value; only look-alike hyphens are folded (the marker does, on
the reply) and a run of whitespace equals any other. The pair itself is kept in task.json (`qa`), so an export
gives back the texts byte for byte. A QA file names no tool calls, so an import writes no session: the case loads
only once someone records `sessions/oracle.json` (the calls that answer it) and its bad sessions.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from xml.parsers import expat
from xml.sax.saxutils import escape

from pydantic import Field, ValidationError

from mcp_evals_pipeline.contracts.task_base import ContractModel
from mcp_evals_pipeline.contracts.usage import QaPair, UsageContract, UsageServer
from mcp_evals_pipeline.record_checks import MAX_QA_BYTES, MAX_QA_PAIRS, RecordError, read_capped
from mcp_evals_pipeline.tasks.catalog import TaskLoadError, parse_contract
from mcp_evals_pipeline.usage.marker import fold_hyphens

PAIR_FIELDS = ("id", "difficulty", "question", "answer", "tools_required", "expected_call_count", "rationale")
METADATA_FIELDS = ("name", "version", "created", "author", "description")
STATISTICS_FIELDS = ("total_questions", "simple_count", "moderate_count", "complex_count", "total_tools",
                     "avg_tools_per_question")
_REGEX_SYNTAX = set(".^$*+?{}[]\\|()")  # a hand-written answer without these is a literal string
READ_ONLY_REASON = "the user asked a question: any write changes something nobody asked for"


class QaFileError(ValueError):
    """A QA file that cannot be read, naming the file and the line."""

    def __init__(self, source: str, line: int | None, message: str):
        self.source, self.line, self.message = source, line, message
        super().__init__(f"{source}" + (f":{line}" if line else "") + f": {message}")


class QaExportError(ValueError):
    """A case that cannot be written as a QA pair (it asks for writes, or its pair no longer matches it)."""


class QaMetadata(ContractModel):
    name: str | None = None
    version: str | None = None
    created: str | None = None
    author: str | None = None
    description: str | None = None


class QaFile(ContractModel):
    pairs: list[QaPair] = Field(min_length=1)
    metadata: QaMetadata | None = None


# ---- reading -------------------------------------------------------------------------------------------------


class _Node:
    __slots__ = ("children", "line", "tag", "text")

    def __init__(self, tag: str, line: int):
        self.tag, self.line = tag, line
        self.children: list[_Node] = []
        self.text: list[str] = []

    @property
    def content(self) -> str:
        return "".join(self.text).strip()


def _tree(data: bytes, source: str) -> _Node:
    parser = expat.ParserCreate()
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    stack: list[_Node] = []
    root: list[_Node] = []

    def refuse_dtd(*_: Any) -> None:
        # A DTD is where entities are declared: with none, no entity is expanded or fetched (defusedxml's rule).
        raise QaFileError(source, parser.CurrentLineNumber, "a DTD (<!DOCTYPE ...>) is not allowed in a QA file")

    def start(tag: str, attrs: dict[str, str]) -> None:
        if attrs:
            raise QaFileError(source, parser.CurrentLineNumber,
                              f"<{tag}> has attribute(s) {', '.join(sorted(attrs))}: the format has none")
        node = _Node(tag, parser.CurrentLineNumber)
        (stack[-1].children if stack else root).append(node)
        stack.append(node)

    def end(_tag: str) -> None:
        stack.pop()

    def text(data: str) -> None:
        if stack:
            stack[-1].text.append(data)

    parser.StartDoctypeDeclHandler = refuse_dtd
    parser.EntityDeclHandler = refuse_dtd
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = text
    try:
        parser.Parse(data, True)
    except expat.ExpatError as exc:
        raise QaFileError(source, exc.lineno, f"not well-formed XML: {expat.ErrorString(exc.code)} "
                                              f"(column {exc.offset + 1})") from exc
    return root[0]


def _no_text(node: _Node, source: str) -> None:
    if node.content:
        raise QaFileError(source, node.line, f"<{node.tag}> holds text outside its elements: {node.content[:40]!r}")


def _fields(node: _Node, allowed: tuple[str, ...], source: str) -> dict[str, str]:
    """The text children of `node`, each allowed name at most once."""
    _no_text(node, source)
    values: dict[str, str] = {}
    for child in node.children:
        if child.tag not in allowed:
            raise QaFileError(source, child.line,
                              f"unknown element <{child.tag}> in <{node.tag}> (allowed: {', '.join(allowed)})")
        if child.tag in values:
            raise QaFileError(source, child.line, f"<{node.tag}> has a second <{child.tag}>")
        if child.children:
            inner = child.children[0]
            raise QaFileError(source, inner.line, f"<{child.tag}> must be text, not hold <{inner.tag}>")
        values[child.tag] = child.content
    return values


def _pair(node: _Node, source: str) -> QaPair:
    values = _fields(node, PAIR_FIELDS, source)
    for required in ("question", "answer"):
        if required not in values:
            raise QaFileError(source, node.line, f"<qa_pair> has no <{required}>")
    for child in node.children:
        if not values[child.tag]:
            raise QaFileError(source, child.line, f"<{child.tag}> is empty")
    try:
        return QaPair.model_validate(values)
    except ValidationError as exc:
        first = exc.errors()[0]
        name = str(first["loc"][0]) if first["loc"] else "qa_pair"
        line = next((c.line for c in node.children if c.tag == name), node.line)
        raise QaFileError(source, line, f"<{name}> {first['msg'].removeprefix('Value error, ')}") from exc


def _check_statistics(node: _Node, pairs: list[tuple[_Node, QaPair]], source: str) -> None:
    values = _fields(node, STATISTICS_FIELDS, source)
    counts = {"total_questions": len(pairs)}
    if all(p.difficulty for _, p in pairs):
        for level in ("simple", "moderate", "complex"):
            counts[f"{level}_count"] = sum(p.difficulty == level for _, p in pairs)
    for name, want in counts.items():
        if name in values and values[name] != str(want):
            line = next(c.line for c in node.children if c.tag == name)
            raise QaFileError(source, line, f"<{name}> says {values[name]}, but the file has {want}")


def parse_qa(data: bytes | str, source: str = "<qa file>") -> QaFile:
    root = _tree(data.encode("utf-8") if isinstance(data, str) else data, source)
    if root.tag != "evaluation":
        raise QaFileError(source, root.line, f"the root element is <{root.tag}>, not <evaluation>")
    _no_text(root, source)
    pairs: list[tuple[_Node, QaPair]] = []
    metadata: QaMetadata | None = None
    statistics: _Node | None = None
    for child in root.children:
        if child.tag == "qa_pair":
            pairs.append((child, _pair(child, source)))
        elif child.tag == "qa_pairs":
            _no_text(child, source)
            for node in child.children:
                if node.tag != "qa_pair":
                    raise QaFileError(source, node.line,
                                      f"unknown element <{node.tag}> in <qa_pairs> (allowed: qa_pair)")
                pairs.append((node, _pair(node, source)))
        elif child.tag == "metadata" and metadata is None:
            given = _fields(child, METADATA_FIELDS, source)
            metadata = QaMetadata.model_validate({k: v for k, v in given.items() if v})
        elif child.tag == "statistics" and statistics is None:
            statistics = child
        else:
            raise QaFileError(source, child.line, f"unknown or repeated element <{child.tag}> in <evaluation> "
                                                  "(allowed: metadata, qa_pairs, qa_pair, statistics)")
    if not pairs:
        raise QaFileError(source, root.line, "<evaluation> has no <qa_pair>")
    if len(pairs) > MAX_QA_PAIRS:
        raise QaFileError(source, pairs[MAX_QA_PAIRS][0].line,
                          f"{len(pairs):,} <qa_pair>s, more than {MAX_QA_PAIRS} (each becomes a case directory)")
    seen: dict[str, int] = {}
    for node, pair in pairs:
        for key in (f"id {pair.id!r}" if pair.id else None, f"question {pair.question!r}"):
            if key is not None and key in seen:
                raise QaFileError(source, node.line, f"the {key} is asked already at line {seen[key]}")
            if key is not None:
                seen[key] = node.line
    if statistics is not None:
        _check_statistics(statistics, pairs, source)
    return QaFile(pairs=[p for _, p in pairs], metadata=metadata)


def read_qa_file(path: Path) -> QaFile:
    """The file, at most MAX_QA_BYTES of it (record_checks.py): each pair becomes a case directory."""
    try:
        data = read_capped(path, MAX_QA_BYTES)
    except OSError as exc:
        raise QaFileError(str(path), None, f"cannot be read: {exc.strerror or exc}") from exc
    except RecordError as exc:
        raise QaFileError(str(path), None, exc.message) from exc
    return parse_qa(data, str(path))


# ---- writing -------------------------------------------------------------------------------------------------


def write_qa(qa: QaFile) -> str:
    """The file seed 003 shows (pairs directly under <evaluation>), each pair's fields in the format's order."""
    lines = ['<?xml version="1.0" encoding="UTF-8"?>', "<evaluation>"]
    meta = qa.metadata.model_dump(exclude_none=True) if qa.metadata else {}
    if meta:
        lines += ["  <metadata>", *(f"    <{k}>{escape(v)}</{k}>" for k, v in meta.items()), "  </metadata>"]
    for pair in qa.pairs:
        values = pair.model_dump(exclude_none=True)
        lines += ["  <qa_pair>", *(f"    <{k}>{escape(values[k])}</{k}>" for k in PAIR_FIELDS if k in values),
                  "  </qa_pair>"]
    return "\n".join([*lines, "</evaluation>"]) + "\n"


# ---- pairs <-> cases -----------------------------------------------------------------------------------------


def answer_pattern(answer: str) -> str:
    """The `answer` regex that finds `answer` as a whole value of a reply, by its exact characters.

    `(?-i:...)`: the marker matches case-insensitively; seed 003 compares strings, so case counts here. The
    lookarounds keep the value whole: no letter, digit, `_` or `-` right before or after it, and no `.` joining
    it to more of a number or version (a sentence's full stop after it is fine)."""
    parts = re.split(r"\s+", fold_hyphens(answer))
    body = r"\s+".join(re.escape(p) for p in parts)
    return rf"(?<![\w-])(?<!\w\.)(?-i:{body})(?![\w-])(?!\.\w)"


def case_document(pair: QaPair, case_id: str, server: UsageServer, world: str, max_turns: int,
                  tier: str = "full") -> dict[str, Any]:
    """The task.json of the case asking `pair` (validated as a UsageContract)."""
    title = f"A question from a QA pair{f' ({pair.difficulty})' if pair.difficulty else ''}: {pair.question}"
    document = {
        "kind": "usage", "id": case_id, "title": title,
        "server": server.model_dump(by_alias=True, exclude_defaults=True), "world": world,
        "mustLand": [], "otherMutations": "violation", "otherMutationsReason": READ_ONLY_REASON,
        "answer": answer_pattern(pair.answer), "maxTurns": max_turns, "tier": tier,
        "qa": pair.model_dump(by_alias=True, exclude_none=True)}
    UsageContract.model_validate(document)
    return document


def case_files(document: dict[str, Any]) -> dict[str, bytes]:
    """task.json and prompt.md of a case, byte for byte (the same pair always gives the same bytes)."""
    return {"task.json": (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8"),
            "prompt.md": (document["qa"]["question"] + "\n").encode("utf-8")}


def case_ids(prefix: str, count: int) -> list[str]:
    width = max(2, len(str(count)))
    return [f"{prefix}-{n:0{width}d}" for n in range(1, count + 1)]


def import_qa(qa: QaFile, out: Path, prefix: str, server: UsageServer, world: str,
              max_turns: int = 12, tier: str = "full") -> list[tuple[str, bool]]:
    """Write one case directory per pair (`<prefix>-01`, ...) under `out`; (id, written) per case: a case already
    there with the same files is left alone, one that differs is refused (an edited task is a new task). Nothing
    is written unless every case can be."""
    if not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", prefix) or "--" in prefix:
        raise QaExportError(f"prefix {prefix!r}: lowercase letters, digits, '.', '_' and '-' (no '--')")
    planned: list[tuple[str, dict[str, bytes]]] = []
    for case_id, pair in zip(case_ids(prefix, len(qa.pairs)), qa.pairs, strict=True):
        files = case_files(case_document(pair, case_id, server, world, max_turns, tier))
        for name, data in files.items():
            path = out / case_id / name
            if path.exists() and path.read_bytes() != data:
                raise QaExportError(f"{path} exists and differs from what {pair.question[:50]!r} gives: "
                                    "an edited case is a new task (choose another --prefix)")
        planned.append((case_id, files))
    written = []
    for case_id, files in planned:
        fresh = not all((out / case_id / name).exists() for name in files)
        (out / case_id).mkdir(parents=True, exist_ok=True)
        for name, data in files.items():
            (out / case_id / name).write_bytes(data)
        written.append((case_id, fresh))
    return written


def pair_of(case_dir: Path) -> QaPair:
    """The QA pair a read-only case asks: its `qa` block, or for a case written by hand with a literal answer, its
    prompt and that literal. A case with writes, without an answer or with a pattern for one is refused. Read from
    task.json and prompt.md alone: a case just imported has no sessions yet and exports all the same."""
    case = case_dir.name
    contract = parse_contract(case_dir / "task.json")
    try:
        prompt = (case_dir / "prompt.md").read_text(encoding="utf-8")
    except OSError as exc:
        raise QaExportError(f"{case}: prompt.md cannot be read: {exc.strerror or exc}") from exc
    if not isinstance(contract, UsageContract):
        raise QaExportError(f"{case} is a {contract.kind} task: only usage cases are QA pairs")
    if contract.must_land:
        writes = ", ".join(m.describe() for m in contract.must_land)
        raise QaExportError(f"{case} asks for writes ({writes}): a QA pair is a read-only question")
    if contract.qa is not None:
        if contract.answer != answer_pattern(contract.qa.answer):
            raise QaExportError(f"{case}: its answer pattern is no longer the one its qa.answer gives "
                                f"({answer_pattern(contract.qa.answer)!r}); restore it or drop the qa block")
        if prompt != contract.qa.question + "\n":
            raise QaExportError(f"{case}: prompt.md is no longer its qa.question")
        return contract.qa
    if contract.answer is None:
        raise QaExportError(f"{case} checks no answer: a QA pair needs one")
    if any(ch in _REGEX_SYNTAX for ch in contract.answer):
        raise QaExportError(f"{case}: its answer is a pattern ({contract.answer!r}), not a string to compare")
    if contract.answer_refuted_by:  # a QA pair compares one string: the replies it must refuse would be lost
        raise QaExportError(f"{case}: its answer has answerRefutedBy patterns a QA pair cannot carry")
    try:
        return QaPair(question=prompt.strip(), answer=contract.answer)
    except ValidationError as exc:
        raise QaExportError(f"{case}: {exc.errors()[0]['msg']}") from exc


def export_qa(case_dirs: list[Path], metadata: QaMetadata | None = None) -> QaFile:
    """The QA file of these read-only cases, in order; every case that is not one is named at once."""
    pairs, refused = [], []
    for case_dir in case_dirs:
        try:
            pairs.append(pair_of(case_dir))
        except (QaExportError, TaskLoadError) as exc:
            refused.append(str(exc))
    if refused:
        raise QaExportError("; ".join(refused))
    if not pairs:
        raise QaExportError("no case selected")
    return QaFile(pairs=pairs, metadata=metadata)
