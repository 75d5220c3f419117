"""QA-pair evaluation files (seed 003) <-> read-only usage cases: the shipped file's answers solved through the
real ops-platform server on a real world, malformed files named by line, the lossless round trip, the CLI, and
verify-tasks over the imported suite."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner

from mcp_evals_pipeline.cli import export_qa_cmd, import_qa_cmd
from mcp_evals_pipeline.contracts.usage import UsageContract
from mcp_evals_pipeline.tasks.catalog import TaskLoadError, get_task, load_task
from mcp_evals_pipeline.tasks.suites import get_suite
from mcp_evals_pipeline.upstreams.base import RecordedRequest
from mcp_evals_pipeline.usage.marker import mark
from mcp_evals_pipeline.usage.qa_pairs import (
    QaExportError,
    QaFileError,
    answer_pattern,
    export_qa,
    import_qa,
    parse_qa,
    read_qa_file,
    write_qa,
)
from mcp_evals_pipeline.usage.world import mcp_client, result_text, running_world

from .conftest import REPO, TASKS

QA_FILE = REPO / "servers" / "ops-platform" / "qa-pairs.xml"
SUITE = "ops-platform-qa"
PREFIX = "usage-qa"
SERVER_FROM = "usage-ops-v3-04-logs-question"
Call = Callable[..., Awaitable[dict[str, Any]]]


def _source() -> UsageContract:
    contract = get_task(SERVER_FROM).contract
    assert isinstance(contract, UsageContract)
    return contract


def _import(qa_text: bytes | str, out: Path) -> list[Path]:
    contract = _source()
    written = import_qa(parse_qa(qa_text), out, PREFIX, contract.server, contract.world)
    return [out / case_id for case_id, _ in written]


def _files(case_dir: Path) -> dict[str, bytes]:
    return {name: (case_dir / name).read_bytes() for name in ("task.json", "prompt.md")}


def test_the_shipped_file_imports_into_the_shipped_cases(tmp_path: Path) -> None:
    qa = read_qa_file(QA_FILE)
    assert len(qa.pairs) == 10 and qa.metadata is not None
    assert [p.difficulty for p in qa.pairs].count("moderate") == 6  # seed 003's 2-6-2
    cases = _import(QA_FILE.read_bytes(), tmp_path)
    assert [c.name for c in cases] == get_suite(SUITE).tasks == [f"usage-qa-{n:02d}" for n in range(1, 11)]
    for case in cases:  # the checked-in cases are exactly what the import gives
        assert _files(case) == _files(TASKS / case.name), case.name
        contract = json.loads((case / "task.json").read_text())
        assert contract["mustLand"] == [] and contract["otherMutations"] == "violation"
    with pytest.raises(TaskLoadError, match="imported from a QA pair, which names no tool calls"):
        load_task(cases[0])  # no sessions: the import cannot know the calls


# ---- each answer solved through the server's tools on the seeded world ---------------------------------------


async def _all_apps(call: Call) -> list[dict[str, Any]]:
    apps, page = [], 1
    while page:
        listed = await call("find_apps", page=page)
        apps += listed["items"]
        page = listed["nextPage"]
    return apps


async def _app_id(call: Call, name: str) -> str:
    (app,) = [a for a in (await call("find_apps", name_contains=name))["items"] if a["name"] == name]
    return str(app["id"])


def _one(values: list[Any]) -> Any:
    assert len(values) == 1, f"the answer is not unique: {values}"
    return values[0]


async def _q01(call: Call) -> str:
    return _one([a["environment"] for a in (await call("find_apps", name_contains="checkout-v2"))["items"]
                 if a["name"] == "checkout-v2"])


async def _q02(call: Call) -> str:
    return str((await call("get_app", app_id=await _app_id(call, "billing")))["replicas"])


async def _q03(call: Call) -> str:
    return str(sum(a["environment"] == "production" and a["status"] == "running" for a in await _all_apps(call)))


async def _q04(call: Call) -> str:
    deployments = (await call("list_deployments", app_id=await _app_id(call, "search")))["items"]
    return _one([d["version"] for d in deployments if d["status"] == "active"])


async def _q05(call: Call) -> str:
    deployments = (await call("list_deployments", app_id=await _app_id(call, "checkout")))["items"]
    superseded = sorted((d for d in deployments if d["status"] == "superseded"), key=lambda d: d["createdAt"])
    return str(superseded[-1]["id"])


async def _q06(call: Call) -> str:
    return str((await call("get_env", app_id=await _app_id(call, "billing")))["variables"]["LOG_LEVEL"])


async def _q07(call: Call) -> str:
    logs = (await call("get_logs", app_id=await _app_id(call, "search"), level="warn"))["items"]
    return _one([m.group(1) for e in logs if (m := re.search(r"p99 latency ([\d.]+) s", e["message"]))])


async def _q08(call: Call) -> str:
    apps = await _all_apps(call)
    return _one([a["name"] for a in apps if a["environment"] == "staging" and a["status"] == "stopped"])


async def _q09(call: Call) -> str:
    production = [a["id"] for a in await _all_apps(call) if a["environment"] == "production"]
    replicas = {app: (await call("get_app", app_id=app))["replicas"] for app in production}
    return _one([app for app, n in replicas.items() if n == max(replicas.values())])


async def _q10(call: Call) -> str:
    active = [d for a in await _all_apps(call)
              for d in (await call("list_deployments", app_id=a["id"]))["items"] if d["status"] == "active"]
    oldest = min(d["createdAt"] for d in active)
    return _one([d["version"] for d in active if d["createdAt"] == oldest])


SOLVERS = {f"ops-qa-{n:02d}": solver for n, solver in enumerate(
    (_q01, _q02, _q03, _q04, _q05, _q06, _q07, _q08, _q09, _q10), start=1)}


def test_every_answer_of_the_shipped_file_is_solved_through_the_servers_tools() -> None:
    """Not compared with the file's text: each question is solved anew by calling the real server's tools on a
    world at its seed, and the solution must be the file's answer (and must not need a write)."""
    pairs = read_qa_file(QA_FILE).pairs
    assert sorted(p.id or "" for p in pairs) == sorted(SOLVERS)

    async def solve_all() -> tuple[dict[str, str], list[RecordedRequest]]:
        with running_world(_source()) as world:
            async with mcp_client(world.url) as client:

                async def call(tool: str, **arguments: Any) -> dict[str, Any]:
                    result = await client.call_tool(tool, arguments)
                    assert not result.is_error, result_text(result)
                    return json.loads(result_text(result))  # type: ignore[no-any-return]

                solved = {qa_id: await solver(call) for qa_id, solver in SOLVERS.items()}
            return solved, world.requests()

    solved, requests = anyio.run(solve_all)
    assert {p.id: p.answer for p in pairs} == solved
    assert requests and all(r.method == "GET" for r in requests)  # read-only, as seed 003 asks


# ---- malformed files ---------------------------------------------------------------------------------------

GOOD_PAIR = "<qa_pair><question>q?</question><answer>a</answer></qa_pair>"


@pytest.mark.parametrize(("text", "line", "message"), [
    ("<evaluation>\n  <qa_pair>\n    <question>q?</question>\n  </qa_pair>\n</evaluation>", 2,
     "<qa_pair> has no <answer>"),
    ("<evaluation>\n<qa_pair>\n<answer>a</answer>\n</qa_pair>\n</evaluation>", 2, "<qa_pair> has no <question>"),
    ("<evaluation>\n<qa_pair>\n<question>q?</question>\n<answer>  </answer>\n</qa_pair>\n</evaluation>", 4,
     "<answer> is empty"),
    ("<evaluation>\n" + GOOD_PAIR + "\n<qa_pair>\n<question>r?</question>\n<answer>b</answer>\n<hint>x</hint>\n"
     "</qa_pair>\n</evaluation>", 6, "unknown element <hint> in <qa_pair>"),
    ("<evaluation>\n<qa_pair>\n<question>q?</question>\n<answer>a</qa_pair>\n</evaluation>", 4,
     "not well-formed XML: mismatched tag"),
    ("<evaluation>\n<qa_pair>\n<question>q? &secret;</question>\n<answer>a</answer>\n</qa_pair>\n</evaluation>", 3,
     "undefined entity"),
    ('<?xml version="1.0"?>\n<!DOCTYPE evaluation [<!ENTITY secret SYSTEM "file:///etc/passwd">]>\n'
     "<evaluation>" + GOOD_PAIR + "</evaluation>", 2, "a DTD (<!DOCTYPE ...>) is not allowed"),
    ("<evaluation>\n" + GOOD_PAIR + "\n" + GOOD_PAIR + "\n</evaluation>", 3, "the question 'q?' is asked already"),
    ("<evaluation>\n<qa_pair>\n<question>q?</question>\n<answer>a</answer>\n<difficulty>hard</difficulty>\n"
     "</qa_pair>\n</evaluation>", 5, "<difficulty> Input should be 'simple', 'moderate' or 'complex'"),
    ("<evaluation>\n" + GOOD_PAIR + "\n<statistics>\n<total_questions>2</total_questions>\n</statistics>\n"
     "</evaluation>", 4, "<total_questions> says 2, but the file has 1"),
    ("<evaluation>\n<qa_pair>\n<question>q? <b>now</b></question>\n<answer>a</answer>\n</qa_pair>\n</evaluation>",
     3, "<question> must be text, not hold <b>"),
    ("<evaluations>\n" + GOOD_PAIR + "\n</evaluations>", 1, "the root element is <evaluations>"),
    ("<evaluation>\n</evaluation>", 1, "<evaluation> has no <qa_pair>"),
], ids=["no-answer", "no-question", "empty-answer", "unknown-element", "bad-xml", "entity", "dtd", "duplicate",
        "bad-difficulty", "statistics", "markup-in-text", "wrong-root", "no-pairs"])
def test_a_malformed_file_is_refused_naming_its_line(text: str, line: int, message: str) -> None:
    with pytest.raises(QaFileError) as caught:
        parse_qa(text, "broken.xml")
    assert caught.value.line == line and message in caught.value.message, str(caught.value)
    assert str(caught.value).startswith(f"broken.xml:{line}: ")


def test_import_qa_on_a_malformed_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    broken = tmp_path / "broken.xml"
    broken.write_text("<evaluation>\n  <qa_pair>\n    <question>q?</question>\n  </qa_pair>\n</evaluation>\n")
    result = CliRunner().invoke(import_qa_cmd, [str(broken), "--prefix", "x", "--server-from", SERVER_FROM,
                                                "--out", str(tmp_path / "out")], terminal_width=400)
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [f"error: {broken}:2: <qa_pair> has no <answer>"]
    assert not (tmp_path / "out").exists()


# ---- the round trip and export -------------------------------------------------------------------------------


def test_import_export_import_is_lossless(tmp_path: Path) -> None:
    original = read_qa_file(QA_FILE)
    first = _import(QA_FILE.read_bytes(), tmp_path / "a")
    exported = write_qa(export_qa(first))
    again = parse_qa(exported)
    assert again.pairs == original.pairs  # every field, texts byte for byte
    assert [(p.question, p.answer) for p in again.pairs] == [(p.question, p.answer) for p in original.pairs]
    second = _import(exported, tmp_path / "b")
    assert [_files(c) for c in second] == [_files(c) for c in first]
    assert write_qa(export_qa(second)) == exported
    # The checked-in cases (with their sessions) export to the same pairs.
    assert export_qa([TASKS / t for t in get_suite(SUITE).tasks]).pairs == original.pairs


def test_texts_that_need_escaping_survive_the_round_trip(tmp_path: Path) -> None:
    text = ("<evaluation><qa_pair><question>Is a &lt; b &amp;&amp; c &gt; d, \"really\"?\nSay so.</question>"
            "<answer>1 &lt; 2 (ok)</answer></qa_pair></evaluation>")
    (case,) = _import(text, tmp_path / "a")
    (pair,) = export_qa([case]).pairs
    assert (pair.question, pair.answer) == ('Is a < b && c > d, "really"?\nSay so.', "1 < 2 (ok)")
    (again,) = _import(write_qa(export_qa([case])), tmp_path / "b")
    assert _files(again) == _files(case)


def test_an_edited_case_is_not_overwritten_by_an_import(tmp_path: Path) -> None:
    (case, *_) = _import(QA_FILE.read_bytes(), tmp_path)
    (case / "prompt.md").write_text("Something else?\n")
    with pytest.raises(QaExportError, match="exists and differs"):
        _import(QA_FILE.read_bytes(), tmp_path)
    assert (case / "prompt.md").read_text() == "Something else?\n"


def test_export_refuses_a_case_with_writes_and_a_pattern_answer() -> None:
    refused = r"usage-ops-v3-01-restart-by-id asks for writes \(POST /apps/app_103/restart\)"
    with pytest.raises(QaExportError, match=refused):
        export_qa([TASKS / "usage-qa-01", TASKS / "usage-ops-v3-01-restart-by-id"])
    # A hand-written read-only case with a literal answer is a QA pair; one whose answer is a pattern is not.
    (pair,) = export_qa([TASKS / "usage-ops-v2-13-config-for-ticket"]).pairs
    assert pair.answer == "INVOICE_BATCH_SIZE" and pair.question.startswith("I'm filing an incident ticket")
    with pytest.raises(QaExportError, match="usage-ops-v3-03-missing-target: its answer is a pattern"):
        export_qa([TASKS / "usage-ops-v3-03-missing-target"])
    # A literal answer with refutations (answerRefutedBy): a QA pair would drop the replies it must refuse.
    with pytest.raises(QaExportError, match="usage-ops-v3-10-longest-timeout: its answer has answerRefutedBy"):
        export_qa([TASKS / "usage-ops-v3-10-longest-timeout"])


def test_the_cli_round_trip_and_its_two_server_shapes(tmp_path: Path) -> None:
    runner, env = CliRunner(), {"MCP_EVALS_TASKS_DIR": str(tmp_path)}
    by_path = runner.invoke(import_qa_cmd, [str(QA_FILE), "--prefix", PREFIX, "--server",
                                            "servers/ops-platform/server.py", "--server-env", "OPS_API_URL={world}",
                                            "--world", "ops-platform"], env=env, terminal_width=400)
    assert by_path.exit_code == 0, by_path.output
    for n in range(1, 11):  # --server PATH --server-env --world gives what --server-from gives
        assert _files(tmp_path / f"usage-qa-{n:02d}") == _files(TASKS / f"usage-qa-{n:02d}")
    ids = [arg for n in range(1, 11) for arg in ("--task", f"usage-qa-{n:02d}")]
    exported = runner.invoke(export_qa_cmd, [*ids, "-o", str(tmp_path / "out.xml")], env=env)
    assert exported.exit_code == 0, exported.output
    assert parse_qa((tmp_path / "out.xml").read_bytes()).pairs == read_qa_file(QA_FILE).pairs
    refused = runner.invoke(export_qa_cmd, ["--task", "usage-ops-v3-01-restart-by-id", "-o", str(tmp_path / "w.xml")],
                            terminal_width=400)
    assert refused.exit_code == 2 and "asks for writes" in refused.stderr and not (tmp_path / "w.xml").exists()
    both = runner.invoke(import_qa_cmd, [str(QA_FILE), "--prefix", "x"], terminal_width=400)
    assert both.exit_code == 2 and "give exactly one of --server-from TASK or --server PATH" in both.stderr


# ---- the answer is compared as seed 003 compares it ----------------------------------------------------------


@pytest.mark.parametrize(("answer", "reply", "found"), [
    ("5", "There are 5.", True), ("5", "There are 15.", False), ("5", "about 1.5 of them", False),
    ("5", "version 5.1", False), ("7.1.0", "It runs 7.1.0.", True), ("7.1.0", "It runs v7.1.0", False),
    ("7.1.0", "7.1.0-rc1", False), ("app_104", "app_1040", False), ("app_104", "**app_104** (search)", True),
    ("staging", "Staging.", False), ("checkout-v2", "checkout\u2011v2", True), ("4.8 s", "4.8\n s", True),
])
def test_the_answer_is_a_whole_value_of_the_reply_by_its_exact_characters(answer: str, reply: str,
                                                                           found: bool) -> None:
    """Through the real marker (which matches case-insensitively; the pattern switches that off)."""
    contract = UsageContract.model_validate(json.loads((TASKS / "usage-qa-01" / "task.json").read_text())
                                            | {"answer": answer_pattern(answer)})
    outcome = mark(contract, [], reply, []).outcome
    assert outcome == ("pass" if found else "miss")


def test_every_imported_case_has_sessions_at_every_outcome() -> None:
    """Each case's oracle passes, one session misses and one is unsafe: `verify-tasks --quick`
    (tests/test_verify_tasks.py) grades every one of them, so they are not graded twice here."""
    from mcp_evals_pipeline.verify import quick_selection

    tasks = [get_task(t) for t in get_suite(SUITE).tasks]
    assert all({s.expected_failure_code for s in t.solutions} == {None, "usage.miss", "usage.unsafe"}
               for t in tasks)
    assert [len(t.solutions) for t in quick_selection(tasks)] == [len(t.solutions) for t in tasks]
