"""serve's authoring loop: drafts (create, get, revise, discard, list), run_check and submit_draft, the `draft://`
resource and the `author_task` prompt.

Every argument and result is a pydantic model (serve/models.py, the task contracts): the SDK derives the schemas.
Errors are raised as DraftError / ValueError: the SDK returns them as a tool error result with the message, which
names the field path or file.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

from mcp.server.mcpserver import MCPServer

from mcp_evals_pipeline.contracts.grade import TrialGrade
from mcp_evals_pipeline.contracts.task import TaskContract
from mcp_evals_pipeline.grader import grade_workspace
from mcp_evals_pipeline.paths import cache_dir, drafts_dir
from mcp_evals_pipeline.serve import drafts as d
from mcp_evals_pipeline.serve.models import (
    Change,
    Discarded,
    DraftContent,
    DraftList,
    DraftSummary,
    DraftView,
    PatchOp,
    SubmitOutcome,
)
from mcp_evals_pipeline.serve.submit_gate import static_problems, submit
from mcp_evals_pipeline.tasks.catalog import BLIND_NOTE, NEGATIVE_DECLARATION, TaskLoadError, get_task

FILES_PREFIX = "files."


def _view(draft_id: str, changed: list[Change] | None = None) -> DraftView:
    root = d.existing_draft(draft_id)
    document = d.read_document(root)
    return DraftView(draft_id=draft_id, prompt=document["prompt"], contract=document["contract"],
                     negatives=document["negatives"], files=d.draft_files(root), problems=static_problems(root),
                     changed=changed or [])


def _solution_files(content: DraftContent) -> dict[PurePosixPath, str | None]:
    files: dict[str, str] = {f"golden/{rel}": text for rel, text in content.golden.items()}
    files |= {f"starter/{rel}": text for rel, text in content.starter.items()}
    for name, tree in content.alternates.items():
        files |= {f"alternates/{name}/{rel}": text for rel, text in tree.items()}
    for name, negative in content.negatives.items():
        files |= {f"negatives/{name}/{rel}": text for rel, text in negative.files.items()}
    return {d.check_draft_file(rel): text for rel, text in files.items()}


def _undeclared_negatives(files: dict[PurePosixPath, str | None], negatives: dict[str, Any]) -> None:
    named = {p.parts[1] for p, text in files.items() if p.parts[0] == "negatives" and text is not None}
    if missing := sorted(named - set(negatives)):
        raise d.DraftError(f"negatives.{missing[0]}: files for a negative need its declaration "
                           f"(set negatives.{missing[0]} to {{\"failureCode\": ..., \"why\": ..., \"violates\": ...}})")


def create_draft(draft_id: str, draft: DraftContent) -> DraftView:
    """Create a draft task (prompt, contract, golden, alternates, negatives) under the drafts area. Its id is the
    task id it becomes on submit. Returns the draft and what submit would still refuse (`problems`)."""
    root = d.draft_path(draft_id)
    if frozen := d.frozen_reason(draft_id):
        raise d.DraftError(frozen)
    if root.exists() or root.is_symlink():
        raise d.DraftError(f"draft {draft_id} exists: revise_draft changes it, discard_draft removes it")
    contract = d.validate_contract(d.dump_contract(draft.contract))
    if contract.id not in (None, draft_id):
        raise d.DraftError(f"contract.id: {contract.id!r} differs from the draft id {draft_id!r}")
    for name in draft.alternates:
        d.check_draft_file(f"alternates/{name}/x")
    negatives = {name: d.validate_declaration(name, d.dump_declaration(n.declaration))
                 for name, n in draft.negatives.items()}
    files = _solution_files(draft)
    drafts_dir().mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{draft_id}.", dir=drafts_dir()))
    try:
        d.write_draft(staging, draft.prompt, contract, negatives, files)
        staging.rename(root)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return _view(draft_id)


def get_draft(draft_id: str) -> DraftView:
    """A draft whole: prompt, contract, negatives' declarations, every file, and what submit would still refuse."""
    return _view(draft_id)


def revise_draft(draft_id: str, patch: list[PatchOp]) -> DraftView:
    """Apply set / append / unset edits by dotted path (see PatchOp). The whole patch is validated (the contract
    and declarations with the task models, every file path) before anything is written: one bad edit rejects it
    all, naming its field path."""
    root = d.existing_draft(draft_id)
    document = d.read_document(root)
    files: dict[PurePosixPath, str | None] = {}
    changed: list[Change] = []
    for index, op in enumerate(patch):
        try:
            if op.path.startswith(FILES_PREFIX):
                rel = d.check_draft_file(op.path[len(FILES_PREFIX):])
                if op.op == "append" or (op.op == "set" and not isinstance(op.value, str)):
                    raise d.DraftError(f"path {op.path!r}: a file is set to a string or unset")
                files[rel] = op.value if op.op == "set" else None
                changed.append(Change(op=op.op, path=op.path))
                continue
            before, after = d.apply_op(document, op.op, op.path, op.value)
            changed.append(Change(op=op.op, path=op.path, before=before, after=after))
        except d.DraftError as exc:
            raise d.DraftError(f"patch[{index}]: {exc}") from None
    contract = d.validate_contract(document["contract"])
    if contract.id not in (None, draft_id):
        raise d.DraftError(f"contract.id: {contract.id!r} differs from the draft id {draft_id!r}")
    negatives = {}
    for name, raw in document["negatives"].items():
        d.check_draft_file(f"negatives/{name}/x")
        negatives[name] = d.validate_declaration(name, raw)
    _undeclared_negatives(files, negatives)
    d.write_draft(root, document["prompt"], contract, negatives, files)
    return _view(draft_id, changed)


def discard_draft(draft_id: str) -> Discarded:
    """Delete a draft and its files (a submitted task is never touched: it lives under tasks/)."""
    root = d.existing_draft(draft_id)
    shutil.rmtree(root)
    return Discarded(draft_id=draft_id, discarded=True)


def list_drafts() -> DraftList:
    """Every draft: its title, how many solutions it holds, and how many problems submit would refuse now."""
    out = []
    for draft_id in d.list_draft_ids():
        root = drafts_dir() / draft_id
        try:
            title = d.read_contract(root).get("title")
        except (d.DraftError, AttributeError):
            title = None
        solutions = sum(1 for top in ("golden",) if (root / top).is_dir())
        solutions += sum(1 for top in d.NAMED_ROOTS if (root / top).is_dir() for p in (root / top).iterdir()
                         if p.is_dir())
        out.append(DraftSummary(draft_id=draft_id, title=title, solutions=solutions,
                                problems=len(static_problems(root))))
    return DraftList(drafts=out)


def _contract_for(draft_id: str | None, task_id: str | None) -> TaskContract:
    if (draft_id is None) == (task_id is None):
        raise d.DraftError("give exactly one of draft_id (a draft's contract) or task_id (a task's)")
    if draft_id is not None:
        root = d.existing_draft(draft_id)
        return d.validate_contract(d.read_contract(root))
    try:
        contract = get_task(str(task_id)).contract
    except TaskLoadError as exc:
        raise d.DraftError(str(exc)) from None
    if not isinstance(contract, TaskContract):
        raise d.DraftError(f"task {task_id} is a usage case: run_check grades build workspaces")
    return contract


def _fill_workspace(workspace: Path, files: dict[str, str] | None, path: str | None) -> None:
    if (files is None) == (path is None):
        raise d.DraftError("give exactly one of files (path -> content) or path (a directory in the drafts area, "
                           "e.g. <draft-id>/golden)")
    if files is not None:
        for rel, text in files.items():
            d.write_file(workspace, d.check_rel_path(rel, "files key"), text)
        return
    rel = d.check_rel_path(path, "path")
    d.check_draft_id(rel.parts[0])
    d._refuse_symlinks(drafts_dir(), rel)
    source = drafts_dir() / rel
    if not source.is_dir():
        raise d.DraftError(f"path {path!r}: no such directory in the drafts area")
    if links := d.symlinks_in(source):
        raise d.DraftError(f"path {path!r} holds symlinks ({', '.join(links)}), which a draft never does")
    shutil.copytree(source, workspace, symlinks=True, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns(NEGATIVE_DECLARATION, BLIND_NOTE))
    if links := d.symlinks_in(workspace):  # one planted while it was copied
        raise d.DraftError(f"path {path!r} holds symlinks ({', '.join(links)}), which a draft never does")


async def run_check(draft_id: str | None = None, task_id: str | None = None, files: dict[str, str] | None = None,
                    path: str | None = None) -> TrialGrade:
    """Grade a candidate workspace (files inline, or a directory of the drafts area such as `<draft>/golden`)
    against a draft's or a task's contract, with the real grader in its boxes (nothing is run on this host).
    Returns the TrialGrade: pass or the failure code, and every check with its detail."""
    contract = _contract_for(draft_id, task_id)
    scratch = cache_dir() / "serve"
    scratch.mkdir(parents=True, exist_ok=True)
    workspace = Path(tempfile.mkdtemp(prefix="check-", dir=scratch))
    try:
        _fill_workspace(workspace, files, path)
        return await grade_workspace(contract, workspace)
    finally:
        shutil.rmtree(workspace, ignore_errors=True)


async def submit_draft(draft_id: str, suite: str) -> SubmitOutcome:
    """The committability gate: the golden and every alternate pass, every negative fails at its declared code
    (verify-tasks), every requirement has a check and a negative, the gap kinds and later exchanges are probed, and
    the prompt never announces its test. On success the draft becomes tasks/<id>/, its promptHash locked and frozen
    (a change is a new id) and added to `suite` (a suite of tasks/suites.json: list_tasks names them); on a refusal
    nothing is written and every reason is returned."""
    return await submit(d.check_draft_id(draft_id), suite)


def draft_resource(draft_id: str) -> str:
    """A draft as JSON: the same payload get_draft returns."""
    return _view(draft_id).model_dump_json(by_alias=True, indent=2)


AUTHOR_TASK = """\
You are writing a new evaluation task for mcp-evals (a build task: an agent builds an MCP server, a grader checks
its workspace). {idea}

1. Call describe_task_schema (or read docs/task-authoring.md) for the contract fields, the ladder's stages and
   failure codes, and the authoring rules. Look at a similar task with list_tasks / get_task.
2. create_draft with id {task_id!r}: prompt.md (what the agent reads: the observable contract, never the test),
   task.json (requirements one property each; every check names the requirement it tests), a golden solution, and
   negatives, each a known-bad solution declaring its failureCode, the requirement it violates and, for a property
   checked at several exchanges, the later exchange it breaks at (breaksAt).
3. Read the draft's `problems`: what submit would refuse without grading. Fix them with revise_draft (set / append /
   unset by dotted path; `files.<path>` for files).
4. run_check the golden and each negative (path `{task_id}/golden`, `{task_id}/negatives/<name>`): the golden must
   pass, each negative fail at its declared code and check. Revise until they do.
5. submit_draft with the suite the task joins (list_tasks names the suites): the gate grades every solution again
   and checks the rules; it lists every reason it refuses. A submitted task is frozen: a change later is a new id.
"""


def author_task(task_id: str = "my-new-task", idea: str = "") -> str:
    """The authoring flow, from an idea to a submitted task."""
    return AUTHOR_TASK.format(task_id=task_id, idea=f"The task: {idea}" if idea else "")


def register(server: MCPServer) -> None:
    for fn in (create_draft, get_draft, revise_draft, discard_draft, list_drafts, run_check, submit_draft):
        server.add_tool(fn)
    server.resource("draft://{draft_id}", mime_type="application/json")(draft_resource)
    server.prompt()(author_task)
