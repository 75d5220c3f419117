"""What a usage condition gives the agent besides the server's tools, as one text appended to the prompt.

`bare`: nothing. `instructions`: the server's own instructions text, as the server under evaluation sent it in its
initialize result (read live: it is the server team's text, whatever the server is). `docs`: the docs pack of the
case's suite (tasks/suites.json `docsPack`). The text reaches the model in the prompt for every runner alike: MCP
clients differ in whether they show a server's instructions to the model at all (the openai runner has no such
channel), so the recording proxy never relays them and the condition alone decides what the model reads.
"""

from __future__ import annotations

from pathlib import Path

from mcp_evals_pipeline.conditions import Condition
from mcp_evals_pipeline.paths import REPO_ROOT
from mcp_evals_pipeline.tasks.catalog import Task
from mcp_evals_pipeline.tasks.suites import SuiteError, load_suites, suite_of

DOCS_LIMIT = 200_000  # characters: a pack is reference text for one server, not a corpus


class ConditionUnavailable(ValueError):
    """The condition has nothing to give for this case (no docs pack, a server without instructions): the trial
    would be a `bare` one under another name, so it is refused (a permanent preparation error, never a row that
    pools with real ones)."""


def docs_pack_path(task: Task) -> Path:
    """The docs pack of the task's suite; ConditionUnavailable naming the suite when there is none."""
    try:
        suites = load_suites()
    except SuiteError as exc:
        raise ConditionUnavailable(f"the docs condition needs the suite's docsPack: {exc}") from exc
    name = suite_of(task.id, task.prompt_hash, suites=suites)
    if name is None or suites[name].docs_pack is None:
        where = f"suite {name!r}" if name else "no suite (tasks/suites.json)"
        raise ConditionUnavailable(f"{task.id} is in {where} with no docsPack: the docs condition has nothing to add")
    path = REPO_ROOT / str(suites[name].docs_pack)
    if not path.exists():
        raise ConditionUnavailable(f"suite {name!r}: docsPack {suites[name].docs_pack} does not exist")
    return path


def read_docs_pack(path: Path) -> str:
    """A Markdown file, or every Markdown file of a folder in name order, each under its file name."""
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*.md") if p.is_file())
    if not files:
        raise ConditionUnavailable(f"docs pack {path} holds no Markdown file")
    parts = [f.read_text(encoding="utf-8").strip() if len(files) == 1
             else f"## {f.relative_to(path).as_posix()}\n\n{f.read_text(encoding='utf-8').strip()}" for f in files]
    text = "\n\n".join(parts)
    if len(text) > DOCS_LIMIT:
        raise ConditionUnavailable(f"docs pack {path} is {len(text)} characters (at most {DOCS_LIMIT})")
    return text


def brief(condition: Condition, task: Task, server_instructions: str | None) -> str:
    """The text the condition appends to the prompt ('' for `bare`)."""
    if condition.instructions:
        if not (server_instructions or "").strip():
            raise ConditionUnavailable("the server under evaluation sends no instructions: the instructions "
                                       "condition has nothing to add")
        return ("\n\n---\nThe server whose tools you have gives these instructions:\n\n"
                f"{str(server_instructions).strip()}\n")
    if condition.docs:
        return f"\n\n---\nDocumentation for the tools you have:\n\n{read_docs_pack(docs_pack_path(task))}\n"
    return ""

