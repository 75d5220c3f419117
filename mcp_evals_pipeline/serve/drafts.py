"""Drafts: task directories an agent writes through `mcp-evals serve`, under paths.drafts_dir(), never under tasks/.

A draft `<drafts>/<id>/` has exactly a task's layout (prompt.md, task.json, golden/, alternates/<name>/,
negatives/<name>/ with negative.json, optional starter/), so the catalog loads it as the task `<id>` it becomes on
submit. Everything in it is agent-written: it is validated as data and graded only in the grader's boxes, never
imported or run here. Every id is checked (ids.py) and every file path stays inside its draft: no absolute path,
no `..`, no symlink followed (none is ever created; one found is refused).
"""

from __future__ import annotations

import copy
import json
import os
import shutil
from pathlib import Path, PurePosixPath
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import ValidationError

from mcp_evals_pipeline.contracts.task import TaskContract
from mcp_evals_pipeline.ids import check_id
from mcp_evals_pipeline.paths import drafts_dir, prompt_hash_lock, tasks_dir
from mcp_evals_pipeline.tasks.catalog import BLIND_NOTE, NEGATIVE_DECLARATION, NegativeDeclaration, read_lock

PROMPT = "prompt.md"
CONTRACT = "task.json"
# The top-level directories a draft's files live in (docs/task-authoring.md's layout); the named ones hold one
# solution per subdirectory.
SOLUTION_ROOTS = ("golden", "starter")
NAMED_ROOTS = ("alternates", "negatives")
MAX_FILE_BYTES = 512 * 1024
MAX_PATH_PARTS = 16


class DraftError(ToolError, ValueError):
    """Bad input about a draft, naming the draft, field path or file it is about (nothing was written). A ToolError:
    the SDK answers the caller with this message as a tool error result."""


def check_draft_id(draft_id: object) -> str:
    """A draft id is the task id it becomes: a plain name (ids.py) without a task id's forbidden `--` | [ ] ,."""
    try:
        value = check_id(draft_id, "draft id")
    except ValueError as exc:
        raise DraftError(str(exc)) from None
    if "--" in value or any(ch in value for ch in "|[],"):
        raise DraftError(f"draft id {value!r}: task ids may not contain '--', '|', '[', ']' or ','")
    return value


def check_rel_path(rel: object, what: str = "file path") -> PurePosixPath:
    """A relative path that stays where it is put: no absolute path, no `.` / `..` / empty part, no backslash or
    NUL, at most MAX_PATH_PARTS parts."""
    if not isinstance(rel, str) or not rel:
        raise DraftError(f"{what} must be a non-empty string, got {rel!r}")
    if "\\" in rel or "\0" in rel:
        raise DraftError(f"{what} {rel!r} may not contain a backslash or NUL")
    path = PurePosixPath(rel)
    if path.is_absolute() or rel.startswith("~"):
        raise DraftError(f"{what} {rel!r} must be relative")
    parts = rel.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise DraftError(f"{what} {rel!r} may not contain '..', '.' or empty parts")
    if len(parts) > MAX_PATH_PARTS:
        raise DraftError(f"{what} {rel!r} is deeper than {MAX_PATH_PARTS} parts")
    return path


def check_draft_file(rel: str) -> PurePosixPath:
    """A file of a draft's solutions: under golden/ or starter/, or alternates/<name>/ or negatives/<name>/; a
    negative's declaration and a blind note are written through their own fields, never as files."""
    path = check_rel_path(rel)
    parts = path.parts
    if parts[0] in SOLUTION_ROOTS and len(parts) >= 2:
        return path
    if parts[0] in NAMED_ROOTS and len(parts) >= 3:
        try:
            check_id(parts[1], f"{parts[0][:-1]} name")
        except ValueError as exc:
            raise DraftError(f"file path {rel!r}: {exc}") from None
        if len(parts) == 3 and parts[2] in (NEGATIVE_DECLARATION, BLIND_NOTE):
            raise DraftError(f"file path {rel!r}: {parts[2]} is written through the negative's declaration, "
                             "not as a file")
        return path
    raise DraftError(f"file path {rel!r} must be under golden/, starter/, alternates/<name>/ or negatives/<name>/")


def _refuse_symlinks(root: Path, rel: PurePosixPath) -> None:
    """No part of root/rel (that exists) is a symlink: a write or read through one could leave the draft."""
    here = root
    if here.is_symlink():
        raise DraftError(f"{here} is a symlink")
    for part in rel.parts:
        here = here / part
        if here.is_symlink():
            raise DraftError(f"{rel}: {here.name} is a symlink, which a draft never holds")


def write_file(root: Path, rel: PurePosixPath, content: str) -> None:
    """Write content at root/rel without following a symlink anywhere on the way."""
    data = content.encode("utf-8")
    if len(data) > MAX_FILE_BYTES:
        raise DraftError(f"file {rel}: {len(data)} bytes, more than {MAX_FILE_BYTES}")
    _refuse_symlinks(root, rel)
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    _refuse_symlinks(root, rel)  # nothing raced a link in while the directories were made
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def draft_path(draft_id: str) -> Path:
    return drafts_dir() / check_draft_id(draft_id)


def existing_draft(draft_id: str) -> Path:
    path = draft_path(draft_id)
    if path.is_symlink() or not path.is_dir():
        known = ", ".join(list_draft_ids()) or "none"
        raise DraftError(f"no draft {draft_id!r} (drafts: {known})")
    return path


def list_draft_ids() -> list[str]:
    root = drafts_dir()
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and not p.is_symlink() and not p.name.startswith("."))


def frozen_reason(task_id: str) -> str | None:
    """Why `task_id` can no longer be written: it is a task, or its hash is locked (a change is a new id)."""
    if (tasks_dir() / task_id).exists():
        return f"{task_id} is already a task ({tasks_dir() / task_id}); a task is frozen: a change is a new id"
    if task_id in read_lock():
        return (f"{task_id} is locked in {prompt_hash_lock()}; a submitted task is frozen: a change is a new id")
    return None


# ---- the draft as a document: what revise_draft patches ---------------------------------------------------------

def _loc(loc: tuple[int | str, ...], prefix: str) -> str:
    return ".".join([prefix, *(str(p) for p in loc)]) if loc else prefix


def validation_errors(exc: ValidationError, prefix: str) -> list[str]:
    """Every error of a validation, each naming its field path the way a patch names it (`contract.calls.0.tool`)."""
    return [f"{_loc(err['loc'], prefix)}: {err['msg']}" for err in exc.errors()]


def validate_contract(raw: Any) -> TaskContract:
    if isinstance(raw, dict) and raw.get("kind", "build") != "build":
        raise DraftError(f"contract.kind: {raw.get('kind')!r}: serve drafts build tasks only (usage cases are "
                         "written by hand: docs/task-authoring.md)")
    try:
        return TaskContract.model_validate(raw)
    except ValidationError as exc:
        raise DraftError("; ".join(validation_errors(exc, "contract"))) from None


def validate_declaration(name: str, raw: Any) -> NegativeDeclaration:
    try:
        declaration = NegativeDeclaration.model_validate(raw)
    except ValidationError as exc:
        raise DraftError("; ".join(validation_errors(exc, f"negatives.{name}"))) from None
    if not declaration.failure_code.startswith("contract."):
        raise DraftError(f"negatives.{name}.failureCode: must be a contract.<stage> code")
    return declaration


def dump_contract(contract: TaskContract) -> dict[str, Any]:
    """task.json as written: camelCase, defaults left out (what an author would write)."""
    return contract.model_dump(mode="json", by_alias=True, exclude_defaults=True)


def dump_declaration(declaration: NegativeDeclaration) -> dict[str, Any]:
    return declaration.model_dump(mode="json", by_alias=True, exclude_defaults=True)


def read_text(root: Path, rel: str) -> str:
    """A draft's file, read without following a symlink anywhere on the way."""
    path = PurePosixPath(rel)
    _refuse_symlinks(root, path)
    fd = os.open(root / path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as handle:
        return handle.read().decode("utf-8")


def read_contract(root: Path) -> Any:
    try:
        return json.loads(read_text(root, CONTRACT))
    except (OSError, ValueError) as exc:
        raise DraftError(f"{root.name}/{CONTRACT}: {exc}") from None


def read_document(root: Path) -> dict[str, Any]:
    """The draft's structured parts: {prompt, contract, negatives: {name: declaration}}."""
    negatives: dict[str, Any] = {}
    neg_root = root / "negatives"
    if neg_root.is_dir() and not neg_root.is_symlink():
        for neg in sorted(p for p in neg_root.iterdir() if p.is_dir() and not p.is_symlink()):
            rel = f"negatives/{neg.name}/{NEGATIVE_DECLARATION}"
            try:
                negatives[neg.name] = json.loads(read_text(root, rel)) if (root / rel).exists() else {}
            except (OSError, ValueError) as exc:
                raise DraftError(f"{root.name}/{rel}: {exc}") from None
    try:
        prompt = read_text(root, PROMPT)
    except (OSError, ValueError) as exc:
        raise DraftError(f"{root.name}/{PROMPT}: {exc}") from None
    return {"prompt": prompt, "contract": read_contract(root), "negatives": negatives}


def _segments(path: str) -> list[str | int]:
    out: list[str | int] = []
    for part in path.split("."):
        if part == "":
            raise DraftError(f"path {path!r} has an empty segment")
        out.append(int(part) if part.isdigit() else part)
    return out


def apply_op(document: dict[str, Any], op: str, path: str, value: Any) -> tuple[Any, Any]:
    """set / append / unset at a dotted path of the document (list items by index); (before, after)."""
    segments = _segments(path)
    if segments[0] not in ("prompt", "contract", "negatives"):
        raise DraftError(f"path {path!r}: starts with prompt, contract, negatives.<name> or files.<file path>")
    if segments[0] == "prompt" and (len(segments) != 1 or op != "set" or not isinstance(value, str)):
        raise DraftError("path 'prompt': only set, to a string")
    if segments[0] == "negatives" and len(segments) < 2:
        raise DraftError("path 'negatives': name one negative (negatives.<name>)")
    parent: Any = document
    for depth, seg in enumerate(segments[:-1]):
        where = ".".join(str(s) for s in segments[: depth + 1])
        if isinstance(parent, dict):
            if seg not in parent:
                if op == "unset":
                    raise DraftError(f"path {path!r}: {where} does not exist")
                parent[seg] = {}  # set / append create the objects on the way
            parent = parent[seg]
        elif isinstance(parent, list) and isinstance(seg, int):
            if seg >= len(parent):
                raise DraftError(f"path {path!r}: {where} is out of range ({len(parent)} items)")
            parent = parent[seg]
        else:
            raise DraftError(f"path {path!r}: {where} is not an object or a list index")
    last = segments[-1]
    where = path
    if isinstance(parent, dict):
        before = copy.deepcopy(parent.get(last))
        if op == "set":
            parent[last] = value
        elif op == "append":
            items = parent.setdefault(last, [])
            if not isinstance(items, list):
                raise DraftError(f"path {where!r}: append needs a list, found {type(items).__name__}")
            items.append(value)
        elif last not in parent:
            raise DraftError(f"path {where!r} does not exist")
        else:
            del parent[last]
        return before, copy.deepcopy(parent.get(last))
    if isinstance(parent, list) and isinstance(last, int):
        if last >= len(parent):
            raise DraftError(f"path {where!r}: out of range ({len(parent)} items)")
        before = copy.deepcopy(parent[last])
        if op == "set":
            parent[last] = value
            return before, copy.deepcopy(value)
        if op == "append":
            if not isinstance(parent[last], list):
                raise DraftError(f"path {where!r}: append needs a list")
            parent[last].append(value)
            return before, copy.deepcopy(parent[last])
        del parent[last]
        return before, None
    raise DraftError(f"path {where!r}: its parent is not an object or a list")


def write_draft(root: Path, prompt: str, contract: TaskContract, negatives: dict[str, NegativeDeclaration],
                files: dict[PurePosixPath, str | None]) -> None:
    """Write a draft's parts (files: content, or None to delete); the caller has validated every part."""
    root.mkdir(parents=True, exist_ok=True)
    write_file(root, PurePosixPath(PROMPT), prompt)
    write_file(root, PurePosixPath(CONTRACT), json.dumps(dump_contract(contract), indent=2) + "\n")
    neg_root = root / "negatives"
    if neg_root.is_dir():  # a negative dropped from the document goes with its files
        for neg in neg_root.iterdir():
            if neg.is_dir() and not neg.is_symlink() and neg.name not in negatives:
                shutil.rmtree(neg)
    for name, declaration in negatives.items():
        write_file(root, PurePosixPath("negatives", name, NEGATIVE_DECLARATION),
                   json.dumps(dump_declaration(declaration), indent=2) + "\n")
    for rel, content in files.items():
        if content is not None:
            write_file(root, rel, content)
            continue
        _refuse_symlinks(root, rel)
        target = root / rel
        if not target.is_file():
            raise DraftError(f"files.{rel}: no such file in the draft")
        target.unlink()


def draft_files(root: Path) -> dict[str, str]:
    """Every solution file of a draft (relative path -> text); a file that is not UTF-8 text is named, not shown."""
    out: dict[str, str] = {}
    for top in (*SOLUTION_ROOTS, *NAMED_ROOTS):
        base = root / top
        if not base.is_dir() or base.is_symlink():
            continue
        for path in sorted(base.rglob("*")):
            if path.is_symlink() or not path.is_file() or path.name == NEGATIVE_DECLARATION:
                continue
            rel = path.relative_to(root).as_posix()
            try:
                out[rel] = path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                out[rel] = f"<{path.stat().st_size} bytes, not UTF-8 text>"
    return out


def symlinks_in(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_symlink())
