"""README.md and docs/*.md held to the code: every `mcp-evals <command> --option` they show is a command and options
its `--help` lists, every `make <target>` is a Makefile target, every relative link opens a file, README stays short
and opens with the two commands (the second is the test command CI runs), and no page names a document a reader's
clone does not have."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO

README_MAX_LINES = 150
FIRST_COMMANDS = ("make run", "make test")
# Documents a reader's clone does not have: the project's own working notes.
INTERNAL = (re.compile(r"\.\./shared"), re.compile(r"\bseed 0\d+", re.I), re.compile(r"\bissue #?\d+", re.I))

CODE = re.compile(r"```[^\n]*\n(.*?)```|`([^`\n]+)`", re.S)
# `mcp-evals a --x | b --y` shows two commands; a comment (`# ...`) is not read
CLI_CALL = re.compile(r"\bmcp-evals[ \t]+([a-z][^\n#]*)")
MAKE_CALL = re.compile(r"(?:^|[\s(])make[ \t]+([a-z][\w-]*)", re.M)
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
HELP_OPTION = re.compile(r"^\s+(?:(-\w), )?(--[a-z][a-z-]*)", re.M)

# One process asks the real CLI for every command's --help (one Python start instead of one per command).
HELP_SCRIPT = """
import json, sys
from click.testing import CliRunner
from mcp_evals_pipeline.cli import main
runner = CliRunner()
# A command group's subcommands too, as "group sub" (e.g. `findings close`).
names = [[name] for name in sorted(main.commands)]
names += [[name, sub] for name in sorted(main.commands) for sub in sorted(getattr(main.commands[name], "commands", {}))]
print(json.dumps({" ".join(name): runner.invoke(main, [*name, "--help"], prog_name="mcp-evals").output
                  for name in names}))
"""


def cli_help() -> dict[str, str]:
    """Each command's --help text, from the CLI itself."""
    import json

    done = subprocess.run([sys.executable, "-c", HELP_SCRIPT], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def options_of(help_text: str) -> set[str]:
    return {opt for pair in HELP_OPTION.findall(help_text) for opt in pair if opt} | {"--help"}


def code_of(text: str) -> str:
    """The text of every code block and inline code span: commands are only read where they are shown as code."""
    return "\n".join(block or span for block, span in CODE.findall(text))


def make_targets(makefile: str) -> set[str]:
    return set(re.findall(r"^([a-z][\w-]*):", makefile, re.M))


def page_problems(name: str, text: str, helps: dict[str, str], targets: set[str], here: Path) -> list[str]:
    """What a page shows that the code does not have, one line each."""
    problems: list[str] = []
    code = code_of(text)
    for line in CLI_CALL.findall(code):
        for segment in line.split("|"):
            command, _, rest = segment.strip().partition(" ")
            sub, _, after = rest.partition(" ")
            if f"{command} {sub}" in helps:  # a group's subcommand: its own options
                command, rest = f"{command} {sub}", after
            if command not in helps:
                problems.append(f"{name}: `mcp-evals {command}` is no command (mcp-evals --help)")
                continue
            known = options_of(helps[command])
            problems += [f"{name}: `mcp-evals {command} {option}` is no option of it (--help)"
                         for option in re.findall(r"(?<![\w-])(--[a-z][a-z-]*|-o\b)", rest) if option not in known]
    problems += [f"{name}: `make {target}` is no Makefile target" for target in MAKE_CALL.findall(code)
                 if target not in targets]
    for target in LINK.findall(text):
        if "://" not in target and not (here / target).exists():
            problems.append(f"{name}: the link {target} opens nothing")
    problems += [f"{name}: names {m.group(0)!r}, which a reader's clone does not have" for pattern in INTERNAL
                 for m in pattern.finditer(text)]
    return problems


def readme_problems(readme: str, ci_script: str) -> list[str]:
    """README's own rules: short, and its first code block opens with the two commands, the second the one CI runs."""
    problems = []
    lines = readme.count("\n") + (not readme.endswith("\n"))
    if lines > README_MAX_LINES:
        problems.append(f"README.md: {lines} lines, more than {README_MAX_LINES}")
    block = re.search(r"```[^\n]*\n(.*?)```", readme, re.S)
    shown = [line.split("#")[0].strip() for line in (block.group(1) if block else "").splitlines() if line.strip()]
    if tuple(shown[:2]) != FIRST_COMMANDS:
        problems.append(f"README.md: the first commands are {shown[:2]}, not {list(FIRST_COMMANDS)}")
    elif not re.search(rf"^{re.escape(shown[1])}\s*$", ci_script, re.M):
        problems.append(f"README.md: CI (.ci/run) does not run the test command `{shown[1]}`")
    return problems


@pytest.fixture(scope="module")
def helps() -> dict[str, str]:
    return cli_help()


def test_readme_and_docs_show_only_what_the_code_has(helps: dict[str, str]) -> None:
    assert {"eval", "verify-tasks", "report"} <= set(helps) and "--trials" in options_of(helps["eval"])
    targets = make_targets((REPO / "Makefile").read_text())
    assert {"run", "test", "ui"} <= targets
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    assert len(pages) >= 10, "README's subjects live in docs/, one page each"
    problems = [p for page in pages
                for p in page_problems(page.relative_to(REPO).as_posix(), page.read_text(), helps, targets,
                                       page.parent)]
    problems += readme_problems((REPO / "README.md").read_text(), (REPO / ".ci" / "run").read_text())
    assert problems == [], "\n".join(problems)
    # the checks read something: the pages do show commands and options
    shown = code_of("\n".join(page.read_text() for page in pages))
    assert len(CLI_CALL.findall(shown)) >= 30 and len(MAKE_CALL.findall(shown)) >= 5


def test_each_check_names_what_the_code_lacks(helps: dict[str, str], tmp_path: Path) -> None:
    """The negatives: a page with a misspelled command, an option no command has, a target the Makefile lacks, a
    dead link and working notes; a README too long, opening with other commands, or whose test command CI does not
    run."""
    targets = make_targets((REPO / "Makefile").read_text())
    (tmp_path / "there.md").write_text("x\n")
    page = ("Run `mcp-evals evaluate --trials 2` or\n```sh\n.venv/bin/mcp-evals eval --trails 2 --agent replay  "
            "# --not-read\nmcp-evals list-tasks | lock-task\nmake runn\n```\n"
            "See [here](there.md), [gone](gone.md) and ../shared/DESIGN.md, seed 003, issue 12.\n")
    assert page_problems("p.md", page, helps, targets, tmp_path) == [
        "p.md: `mcp-evals evaluate` is no command (mcp-evals --help)",
        "p.md: `mcp-evals eval --trails` is no option of it (--help)",
        "p.md: `mcp-evals lock-task` is no command (mcp-evals --help)",
        "p.md: `make runn` is no Makefile target",
        "p.md: the link gone.md opens nothing",
        "p.md: names '../shared', which a reader's clone does not have",
        "p.md: names 'seed 003', which a reader's clone does not have",
        "p.md: names 'issue 12', which a reader's clone does not have",
    ]
    good = "# x\n\n```sh\nmake run    # the main job\nmake test   # the tests\n```\n"
    ci = "#!/usr/bin/env bash\nscripts/install_boxes.sh\nmake test\n"
    assert readme_problems(good, ci) == []
    assert readme_problems(good + "line\n" * 150, ci) == ["README.md: 156 lines, more than 150"]
    swapped = good.replace("make run ", "make tmp ").replace("make test", "make run").replace("make tmp", "make test")
    assert readme_problems(swapped, ci) == ["README.md: the first commands are ['make test', 'make run'], "
                                            "not ['make run', 'make test']"]
    assert readme_problems(good, ci.replace("make test", "make check")) == [
        "README.md: CI (.ci/run) does not run the test command `make test`"]


def readme_query(readme: str) -> str:
    """The SQL of README's first query (the text inside `con.sql(\"\"\" ... \"\"\")`)."""
    found = re.search(r'con\.sql\("""(.*?)"""\)', readme, re.S)
    assert found, "README shows a query run from Python"
    return found.group(1)


def wilson(passed: int, n: int) -> tuple[float, float]:
    z = 1.96
    p = passed / n
    centre, spread = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre - spread) / (1 + z * z / n), (centre + spread) / (1 + z * z / n)


def test_the_readme_query_answers_this_weeks_pass_rate_per_suite(tmp_path: Path) -> None:
    """README's query on a real store's models: this week's batches pooled per suite x agent x condition (build and
    usage), last month's left out, with the Wilson interval of the pooled counts."""
    import datetime as dt

    import duckdb

    from mcp_evals_pipeline.sql_models import materialize_models
    from mcp_evals_pipeline.store import TrialStore

    store = TrialStore(tmp_path / "evals.duckdb")
    today = dt.date.today()
    with store.connect() as con:
        materialize_models(con)
        for table, suite, date, passed, valid in [
            ("trends", "mcp-use", today, 1, 2), ("trends", "mcp-use", today, 3, 4),
            ("trends", "mcp-use", today - dt.timedelta(days=40), 0, 9),
            ("usage_trends", "ops-platform", today, 14, 46),
        ]:
            con.execute(f"INSERT INTO {table} BY NAME SELECT ? AS batch_id, ?::DATE AS batch_date, ? AS suite, "
                        "'codex' AS agent_runner, 'm' AS agent_model, 'c' AS condition, ? AS passed, "
                        "? AS valid_scored", [f"b{passed}", date, suite, passed, valid])
    query = readme_query((REPO / "README.md").read_text())
    with duckdb.connect(str(store.path), read_only=True) as con:
        result = con.sql(query)
        rows = result.fetchall()
        assert result.columns[:6] == ["suite", "agent_runner", "agent_model", "condition", "passed", "valid_scored"]
        # the negative: without its week the same query pools last month's batch in
        unbounded = con.sql(query.replace("AND batch_date >= date_trunc('week', current_date)", "")).fetchall()
    assert [(r[0], int(r[4]), int(r[5])) for r in unbounded] == [("mcp-use", 4, 15), ("ops-platform", 14, 46)]
    expected = [("mcp-use", 4, 6, *wilson(4, 6)), ("ops-platform", 14, 46, *wilson(14, 46))]
    assert [(r[0], int(r[4]), int(r[5]), r[7], r[8]) for r in rows] == [
        (s, p, n, pytest.approx(lo, abs=6e-4), pytest.approx(hi, abs=6e-4)) for s, p, n, lo, hi in expected]
