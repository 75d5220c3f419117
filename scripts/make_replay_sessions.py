"""Generate the recorded sessions the `replay` runner plays: tasks/<id>/sessions/*.jsonl.

Each session is written from the task's own solution directories (golden/, alternates/<name>/, negatives/<name>/),
so it stays in step with them: regenerate after changing a solution, and check the output in.

    python scripts/make_replay_sessions.py           # (re)write every task's sessions
    python scripts/make_replay_sessions.py --check   # exit 1 if a checked-in session differs from what it generates

Names say the expected outcome: `pass-<n>.jsonl` must pass the grader, `fail-<negative>.jsonl` must fail with the
failureCode that negatives/<negative>/negative.json declares (tests/test_agents.py replays and grades them all).
Sessions hold no `usage` lines: they were not produced by a model, so a replayed trial reports unknown tokens.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_evals_pipeline.contracts.ladder import STAGES

REPO = Path(__file__).resolve().parent.parent

# A byte-compile that leaves no __pycache__ behind in the workspace (py_compile would write one).
COMPILE = ("python3 -c \"import sys; [compile(open(p).read(), p, 'exec') for p in sys.argv[1:]]; "
           "print('compiled', *sys.argv[1:])\" {files}")
LIST = "find . -type f -not -path './.venv/*' | sort"
# The solutions' module docstrings open with a label for task authors ("Golden solution: ...", "Negative: <the
# bug>"). No agent writes that, and a judge quoting the transcript should not read it: the label goes.
LABEL = re.compile(r'^"""(?:Golden solution|Alternate legitimate solution|Negative(?: \([^)]*\))?): (.*)$')


SLASH_LABEL = re.compile(r"^// (?:Golden solution|Alternate legitimate solution|Negative(?: \([^)]*\))?): (.*)$")


def _unlabel(text: str, docstring: str | None) -> str:
    first, sep, rest = text.partition("\n")
    slash = SLASH_LABEL.match(first)
    if slash:  # the TypeScript solutions' `// Negative: <the bug>` line
        summary = docstring or slash.group(1)[:1].upper() + slash.group(1)[1:]
        return f"// {summary}" + sep + rest
    match = LABEL.match(first)
    if not match:
        return text
    summary = match.group(1)
    closed = summary.endswith('"""')
    summary = summary.removesuffix('"""')
    if docstring:
        summary = docstring
    elif "/" not in summary.split(" ", 1)[0]:  # "src/ layout" stays as written
        summary = summary[:1].upper() + summary[1:]
    return f'"""{summary}' + ('"""' if closed else "") + sep + rest


@dataclass
class Session:
    name: str
    task_dir: Path
    lines: list[dict[str, Any]] = field(default_factory=list)

    def say(self, text: str) -> Session:
        self.lines.append({"type": "assistant", "text": text})
        return self

    def tool(self, tool: str, **args: Any) -> Session:
        self.lines.append({"type": "tool", "tool": tool, "args": args})
        return self

    def write(self, solution: str, *files: str, docstring: str | None = None) -> Session:
        """write_file of solution files (relative to the solution dir; all its files when none are named).
        `docstring` replaces a labelled module docstring's summary (for negatives, whose label names the bug)."""
        root = self.task_dir / solution
        for name in list(files) or _solution_files(root):
            content = _unlabel((root / name).read_text(encoding="utf-8"), docstring)
            self.tool("write_file", path=name, content=content)
        return self

    def compile(self, *files: str) -> Session:
        return self.tool("shell", command=COMPILE.format(files=" ".join(files)), timeout_s=60)

    def render(self) -> str:
        return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in self.lines)


def _solution_files(root: Path) -> list[str]:
    files = [p.relative_to(root).as_posix() for p in root.rglob("*")
             if p.is_file() and p.name != "negative.json" and "__pycache__" not in p.parts]
    # Code first, then the dependency declaration, as an agent usually does.
    return sorted(files, key=lambda f: (not f.endswith(".py"), f))


def v2_01(task_dir: Path) -> list[Session]:
    pass_1 = (
        Session("pass-1", task_dir)
        .say("I'll build this with the official SDK's high-level MCPServer API. First a look at the workspace.")
        .tool("list_files", path=".")
        .say("The workspace is empty. I'll write server.py with a typed `add` tool, served over Streamable HTTP at "
             "/mcp on the port from $PORT, and declare the SDK in requirements.txt.")
        .write("negatives/syntax-error", "server.py", docstring="An MCP server with one typed tool, add.")
        .write("golden", "requirements.txt")
        .say("Byte-compiling before I finish.")
        .compile("server.py")
        .say("A missing colon after the `add` signature. Fixing it and compiling again.")
        .write("golden", "server.py", docstring="An MCP server with one typed tool, add.")
        .compile("server.py")
        .say("Done. server.py exposes `add(a: int, b: int) -> int`; the SDK validates the arguments against the "
             "typed signature, so `a=\"two\"` comes back as a tool error. It listens on 127.0.0.1:$PORT at /mcp.")
    )
    pass_2 = (
        Session("pass-2", task_dir)
        .tool("list_files")
        .say("Empty workspace. I'll use the low-level Server API in a src/ layout: the arithmetic in src/arith.py, "
             "the MCP wiring in src/server.py, dependencies in pyproject.toml.")
        .write("alternates/lowlevel-src-layout")
        .compile("src/arith.py", "src/server.py")
        .tool("shell", command=LIST)
        .tool("read_file", path="src/server.py")
        .say("The tool schema requires integer `a` and `b`, and the handler rejects anything else with isError. "
             "Entry point is src/server.py, started from the workspace root. Finished.")
    )
    fail = (
        Session("fail-wrong-sum", task_dir)
        .say("Let me check what is in the workspace.")
        .tool("list_files", path=".")
        .say("Nothing yet. Writing the server and its requirements.")
        .write("negatives/wrong-sum", docstring="Basic MCP tool server: add two integers.")
        .compile("server.py")
        .say("server.py compiles. The `add` tool is registered with MCPServer and served at /mcp on $PORT. Done.")
    )
    return [pass_1, pass_2, fail]


def v2_02(task_dir: Path) -> list[Session]:
    pass_1 = (
        Session("pass-1", task_dir)
        .say("Plan: one in-memory ticket store shared by the four tools, ids from a counter starting at 1, "
             "ToolError for invalid transitions and unknown ids.")
        .tool("list_files", path=".")
        .write("golden")
        .compile("server.py")
        .tool("shell", command=LIST)
        .say("Done. create_ticket, list_tickets, claim_ticket and close_ticket share one store for the life of the "
             "process; claiming a ticket that is not open and unknown ids (`ticket 42 not found`) raise ToolError.")
    )
    pass_2 = (
        Session("pass-2", task_dir)
        .tool("list_files")
        .say("I'll keep the store in its own module with pydantic models (src/ticket_store.py) and the MCP tools "
             "in src/server.py; dependencies in pyproject.toml.")
        .write("alternates/src-layout-pydantic")
        .compile("src/server.py", "src/ticket_store.py")
        .tool("read_file", path="src/server.py")
        .say("The tools import the store module and share one instance, so state carries across calls. Finished.")
    )
    fail = (
        Session("fail-state-not-shared", task_dir)
        .say("I'll write the ticket queue server in one file.")
        .tool("list_files", path=".")
        .write("negatives/state-not-shared", docstring="Support ticket queue MCP server.")
        .compile("server.py")
        .say("Done: four tools, ids assigned in creation order, ToolError for unknown ids.")
    )
    return [pass_1, pass_2, fail]


def v2_03(task_dir: Path) -> list[Session]:
    pass_1 = (
        Session("pass-1", task_dir)
        .tool("list_files", path=".")
        .say("Empty workspace. I'll embed the four pages verbatim, expose docs://index (application/json), the "
             "template docs://pages/{slug} (text/markdown) and the search_docs tool.")
        .write("golden")
        .compile("server.py")
        .say("Done. Unknown slugs fail the read with `page not found: <slug>`; search_docs matches title or body, "
             "case-insensitively, and returns {count, results} as JSON text.")
    )
    pass_2 = (
        Session("pass-2", task_dir)
        .say("I'll use the low-level Server API so that I control the resource listing, the template listing and "
             "the read errors directly.")
        .tool("list_files")
        .write("alternates/lowlevel-server")
        .compile("server.py")
        .tool("read_file", path="requirements.txt")
        .tool("shell", command=LIST)
        .say("Finished: server.py at the root, dependencies in requirements.txt.")
    )
    fail = (
        Session("fail-no-template", task_dir)
        .tool("list_files", path=".")
        .say("Four pages, so I'll register each page as its own resource next to the index, plus the search tool.")
        .write("negatives/no-template", docstring="Read-only documentation server for the Quillstone docs.")
        .compile("server.py")
        .say("Done: docs://index, docs://pages/<slug> for each page, and search_docs.")
    )
    return [pass_1, pass_2, fail]


PLANS = {
    "py-v4-01-basic-tool-server": v2_01,
    "py-v4-02-stateful-ticket-queue": v2_02,
    "py-v5-03-docs-lookup-server": v2_03,
}
# The ladder's order, to pick the negative that fails latest: the most realistic near-miss for a failing session.
STAGE_ORDER = STAGES


def _own(solution: Path) -> bool:
    """A solution of the task's own authors: blind-round ones (BLIND.json) join the task later and would otherwise
    replace the sessions' solutions by sorting first."""
    return solution.is_dir() and not (solution / "BLIND.json").is_file()


def generic_plan(task_dir: Path) -> list[Session]:
    """Sessions for a task without a hand-written plan: pass-1 from golden/, pass-2 from the first alternate (or
    golden/ again), and fail-<negative> from the negative that fails at the latest stage."""
    def compile_step(session: Session, root: Path) -> Session:
        py = [f for f in _solution_files(root) if f.endswith(".py")]
        return session.compile(*py) if py else session.tool("shell", command=LIST)

    sessions = []
    golden = task_dir / "golden"
    first = (Session("pass-1", task_dir).say("Let me look at the workspace before writing anything.")
             .tool("list_files", path=".").say("Writing the server and its dependency declaration.")
             .write("golden"))
    sessions.append(compile_step(first, golden).say("The server is written and compiles. Done."))
    alternates = sorted(p for p in (task_dir / "alternates").glob("*") if _own(p))
    second_root = alternates[0] if alternates else golden
    second = (Session("pass-2", task_dir).tool("list_files")
              .say("I'll structure this my own way and keep the observable contract exactly as the prompt pins it.")
              .write(second_root.relative_to(task_dir).as_posix()))
    sessions.append(compile_step(second, second_root).tool("shell", command=LIST).say("Finished."))
    negatives = []
    for neg in sorted(p for p in (task_dir / "negatives").glob("*") if _own(p)):
        code = json.loads((neg / "negative.json").read_text())["failureCode"].removeprefix("contract.")
        negatives.append((STAGE_ORDER.index(code) if code in STAGE_ORDER else -1, neg))
    if negatives:
        _, neg = max(negatives, key=lambda item: item[0])
        fail = (Session(f"fail-{neg.name}", task_dir).say("Checking the workspace first.").tool("list_files", path=".")
                .say("Writing the implementation.")
                .write(neg.relative_to(task_dir).as_posix(), docstring="The MCP server for this task."))
        sessions.append(compile_step(fail, neg).say("It compiles and follows the prompt. Done."))
    return sessions


def all_plans(tasks_dir: Path) -> dict[str, object]:
    plans: dict[str, object] = {}
    for task_dir in sorted(p for p in tasks_dir.iterdir() if (p / "task.json").is_file()):
        if json.loads((task_dir / "task.json").read_text()).get("kind", "build") != "build":
            continue  # a usage task's sessions (sessions/*.json) are written by hand, each with its outcome
        plans[task_dir.name] = PLANS.get(task_dir.name, generic_plan)
    return plans


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks-dir", type=Path, default=REPO / "tasks")
    parser.add_argument("--check", action="store_true", help="compare with the files on disk, write nothing")
    args = parser.parse_args(argv)
    stale: list[str] = []
    for task_id, plan in all_plans(args.tasks_dir).items():
        task_dir = args.tasks_dir / task_id
        out_dir = task_dir / "sessions"
        sessions = plan(task_dir)  # type: ignore[operator]
        expected = {f"{s.name}.jsonl": s.render() for s in sessions}
        on_disk = {p.name for p in out_dir.glob("*.jsonl")} if out_dir.is_dir() else set()
        for name, text in expected.items():
            path = out_dir / name
            current = path.read_text(encoding="utf-8") if path.exists() else None
            if current == text:
                continue
            stale.append(str(path))
            if not args.check:
                out_dir.mkdir(exist_ok=True)
                path.write_text(text, encoding="utf-8")
        for name in sorted(on_disk - expected.keys()):
            # Left alone (it may be a real recording someone added), but said, since it changes trial mapping.
            stale.append(f"{out_dir / name} (not generated by this script)")
            if not args.check:
                print(f"note: {out_dir / name} is not generated by this script; left as is", file=sys.stderr)
        if not args.check:
            print(f"{task_id}: {', '.join(sorted(expected))}")
    if args.check and stale:
        print("sessions out of date (run scripts/make_replay_sessions.py):\n  " + "\n  ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
