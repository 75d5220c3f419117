"""The grader against real server processes: stage failures, infra paths, cleanup and isolation."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mcp_evals_pipeline.contracts.grade import STAGES
from mcp_evals_pipeline.contracts.task import TaskContract
from mcp_evals_pipeline.grader import grade_workspace_sync
from mcp_evals_pipeline.grader.scratch import LOCK_FILE, LOCK_GRACE_S, Scratch, scratch_base
from mcp_evals_pipeline.tasks.catalog import discover_tasks

from .conftest import MINIMAL_SERVER, REPO, write_tree
from .support.processes import running_under

REQS = {"requirements.txt": "mcp>=2.3,<3\n"}


def contract_of(data: dict) -> TaskContract:
    return TaskContract.model_validate(data)


@pytest.fixture
def own_scratch(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The scratch roots of the gradings this test starts. What they ran is found under these, not under all of
    scratch_base(): other processes sharing the cache (a second test run, another engineer's) grade there too."""
    roots: list[Path] = []
    init = Scratch.__init__

    def recording(self: Scratch) -> None:
        init(self)
        roots.append(self.root)

    monkeypatch.setattr(Scratch, "__init__", recording)
    return roots


def left_running(roots: list[Path]) -> list[object]:
    """Live processes working under any of roots (by working directory, deleted or not: the scratch is gone)."""
    assert roots, "no grading started"
    return [proc for root in roots for proc in running_under(root)]


# Stages the checked-in tasks do not exercise get their negative here; together with the tasks' negatives,
# every stage of the ladder has one (test_every_stage_has_a_negative).
STAGE_FIXTURES = {
    "contract.imports": (
        {"title": "open-ended", "entryCandidates": ["server.py"],
         "deterministicReadiness": {"mode": "source-imports", "imports": [{"source": "mcp.server.mcpserver"}]}},
        {"server.py": "from fastmcp import FastMCP\n"},
    ),
    "contract.source": (
        {"title": "provenance", "entryCandidates": ["server.py"], "requiredSourcePatterns": [r"@mcp\.tool\(\s*\)"],
         "expectedTools": [{"name": "echo"}]},
        {**REQS, "server.py": "from mcp.server.mcpserver import MCPServer\n"},
    ),
    "contract.build": (
        {"title": "build", "entryCandidates": ["server.py"], "buildCommand": ["python", "-c", "raise SystemExit(3)"],
         "expectedTools": [{"name": "echo"}]},
        {**REQS, "server.py": MINIMAL_SERVER},
    ),
}


@pytest.mark.parametrize("code", sorted(STAGE_FIXTURES))
def test_stage_negative_fixture(tmp_path: Path, code: str) -> None:
    contract, files = STAGE_FIXTURES[code]
    grade = grade_workspace_sync(contract_of(contract), write_tree(tmp_path, files))
    assert grade.failure_code == code
    failing = [c for c in grade.checks if not c.passed]
    assert failing[0].stage == code.removeprefix("contract.")
    assert all(c.detail == f"blocked by {failing[0].stage}" for c in failing[1:])


def test_every_stage_has_a_negative() -> None:
    tasks, _ = discover_tasks()
    covered = {s.expected_failure_code for t in tasks for s in t.solutions if s.kind == "negative"}
    covered |= set(STAGE_FIXTURES)
    assert {f"contract.{stage}" for stage in STAGES} <= covered


def test_the_ladder_is_one_registry() -> None:
    """Every stage is registered once (contracts/ladder.py); the opt-in ones are the registered features, the docs'
    table is the registry's, and the plan runs the stages in its order."""
    from mcp_evals_pipeline.contracts.ladder import LADDER, markdown_table
    from mcp_evals_pipeline.grader.features import FEATURES

    assert tuple(s.name for s in LADDER) == STAGES
    assert set(FEATURES) == {s.name for s in LADDER if s.feature}
    docs = (REPO / "docs" / "task-authoring.md").read_text()
    assert markdown_table() in docs, "docs/task-authoring.md's ladder table differs from contracts/ladder.py"


def test_source_imports_task_is_graded_on_typecheck_and_imports_only(tmp_path: Path) -> None:
    contract, _ = STAGE_FIXTURES["contract.imports"]
    workspace = write_tree(tmp_path, {"server.py": "from mcp.server.mcpserver import MCPServer\n"})
    grade = grade_workspace_sync(contract_of(contract), workspace)
    assert grade.contract_pass and not grade.scored_for_pass_rate
    assert [c.id for c in grade.checks] == ["typecheck", "imports"]


def test_passing_build_and_source_patterns(tmp_path: Path, minimal_contract: dict) -> None:
    contract = {**minimal_contract, "requiredSourcePatterns": [r"@mcp\.tool\(\s*\)"],
                "buildCommand": ["python", "-c", "open('built.txt', 'w').write('ok')"]}
    grade = grade_workspace_sync(contract_of(contract), write_tree(tmp_path, {**REQS, "server.py": MINIMAL_SERVER}))
    assert grade.contract_pass, grade.first_failure
    assert [c.id for c in grade.checks][:6] == ["install", "typecheck", "source", "entry", "build", "start"]
    # The build ran in the grading's copy, in a box: the graded workspace (the trial's snapshot) is untouched.
    assert not (tmp_path / "built.txt").exists()
    assert "net=none" in grade.isolation["build"]


SPAWNING_SERVER = '''
import os, subprocess, sys, time

# A grandchild in a session of its own: it leaves the server's process group, and must die all the same. Started
# before the SDK is imported, so that even the hang (short start timeout) has it running when the timeout fires.
child = subprocess.Popen(["sleep", "300"], start_new_session=True)
open("child.pid", "w").write(str(child.pid))
print("SERVER-STDERR-MARKER", file=sys.stderr, flush=True)
if os.path.exists("hang"):
    time.sleep(300)
from mcp.server.mcpserver import MCPServer

mcp = MCPServer("spawner")

@mcp.tool()
def echo(text: str) -> str:
    return "wrong" if os.path.exists("wrong") else text

mcp.run("streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
'''


@pytest.mark.parametrize(("mode", "expected"), [("pass", None), ("wrong", "contract.calls"),
                                                 ("hang", "contract.start")])
def test_server_tree_is_killed_on_every_path(tmp_path: Path, minimal_contract: dict, mode: str,
                                             expected: str | None, own_scratch: list[Path]) -> None:
    files = {**REQS, "server.py": SPAWNING_SERVER}
    if mode != "pass":
        files[mode] = ""
    workspace = write_tree(tmp_path, files)
    # Only the hang is about the start timeout firing: a short one there, yet long enough for a bare interpreter to
    # start the grandchild. The servers that must start get a generous one (importing the SDK on a loaded 2-core
    # machine can take many seconds; a spurious contract.start is not what this test is about).
    timeout = 5 if mode == "hang" else 120
    grade = grade_workspace_sync(contract_of({**minimal_contract, "startTimeoutSeconds": timeout}), workspace)
    assert grade.failure_code == expected, grade.first_failure
    assert "SERVER-STDERR-MARKER" in (grade.server_output or "")  # printed once the grandchild was started...
    # ...and neither it nor the server is alive. They are found by their working directory (the grading's copy of
    # the workspace, under its scratch): the pids they write are those of the server's own pid namespace.
    assert left_running(own_scratch) == []
    assert not (workspace / "child.pid").exists()  # the server ran in the copy: the workspace is untouched


ENV_SERVER = '''
import json, os
from mcp.server.mcpserver import MCPServer

mcp = MCPServer("env-dump")

@mcp.tool()
def echo(text: str) -> str:
    return json.dumps(dict(os.environ))

mcp.run("streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
'''


def test_server_gets_a_sanitized_environment(tmp_path: Path, minimal_contract: dict,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    canary = "canary-5f1e0c2d-never-leaves-the-harness"
    monkeypatch.setenv("OPENAI_API_KEY", canary)
    monkeypatch.setenv("MCP_EVALS_CANARY", canary)
    contract = {**minimal_contract, "calls": [{"tool": "echo", "args": {"text": "x"}, "expect": [
        {"type": "not-contains", "value": canary},
        {"type": "not-contains", "value": "OPENAI_API_KEY"},
        {"type": "contains", "value": '"PORT"'},
    ]}]}
    grade = grade_workspace_sync(contract_of(contract), write_tree(tmp_path, {**REQS, "server.py": ENV_SERVER}))
    assert grade.contract_pass, grade.first_failure


def test_grading_leaves_the_workspace_as_it_found_it(tmp_path: Path, minimal_contract: dict) -> None:
    workspace = write_tree(tmp_path, {**REQS, "server.py": MINIMAL_SERVER})
    before = sorted(p.relative_to(workspace) for p in workspace.rglob("*"))
    grade = grade_workspace_sync(contract_of(minimal_contract), workspace)
    assert grade.contract_pass
    assert sorted(p.relative_to(workspace) for p in workspace.rglob("*")) == before
    assert grade.sdk_path == "official-sdk" and grade.sdk_version and grade.protocol_version == "2025-11-25"


LOOSE_SERVER = MINIMAL_SERVER.replace("def echo(", "def Echo_Text(")


@pytest.mark.parametrize(("exact", "expected"), [(False, None), (True, "contract.tools")])
def test_tool_names_match_loosely_unless_exact(tmp_path: Path, minimal_contract: dict, exact: bool,
                                               expected: str | None) -> None:
    contract = {**minimal_contract, "expectedTools": [{"name": "echo_text", "requiredProps": ["text"]}],
                "calls": [{"tool": "echo_text", "args": {"text": "hello"}, "expect": {"type": "contains",
                                                                                      "value": "hello"}}]}
    if exact:
        contract["exactToolNames"] = ["echo_text"]
    grade = grade_workspace_sync(contract_of(contract), write_tree(tmp_path, {**REQS, "server.py": LOOSE_SERVER}))
    assert grade.failure_code == expected, grade.first_failure


def test_a_grader_that_cannot_run_is_infra_not_a_failure(tmp_path: Path, minimal_contract: dict,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    monkeypatch.setenv("MCP_EVALS_CACHE_DIR", str(blocker))
    workspace = write_tree(tmp_path / "ws", {**REQS, "server.py": MINIMAL_SERVER})
    grade = grade_workspace_sync(contract_of(minimal_contract), workspace)
    assert grade.failure_code == "infra.grader" and not grade.valid and not grade.contract_pass
    assert "not-a-directory" in (grade.error or "")


def test_contract_this_grader_cannot_check_is_refused_as_infra(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A grader deployed without one of the opt-in stages never grades a contract that needs it."""
    from mcp_evals_pipeline.grader.features import FEATURES

    monkeypatch.delitem(FEATURES, "views")
    contract = contract_of({"title": "legacy", "entryCandidates": ["server.py"],
                            "expectedTools": [{"name": "a", "viewUri": "ui://a.html"}]})
    grade = grade_workspace_sync(contract, write_tree(tmp_path, {"server.py": ""}))
    assert grade.failure_code == "infra.grader" and not grade.valid
    assert "views" in grade.error and "cannot check" in grade.error
    assert grade.permanent  # another attempt would be refused the same way: never worth a retry
    assert "permanent" not in grade.model_dump_json()  # carried into the record's `retryable`, not the grade file


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcp_evals_pipeline.cli", *args], cwd=REPO,
                          capture_output=True, text=True, check=False, timeout=300)


def test_cli_grade_prints_the_trial_grade_and_exit_code(tmp_path: Path) -> None:
    task = REPO / "tasks" / "py-v4-01-basic-tool-server"
    passed = _cli("grade", "--task", task.name, "--workspace", str(task / "golden"), "--json")
    assert passed.returncode == 0, passed.stderr
    grade = json.loads(passed.stdout)
    assert grade["contractPass"] is True and grade["failureCode"] is None and grade["graderVersion"]
    assert {"id", "pass", "required", "detail"} <= set(grade["checks"][0])
    failed = _cli("grade", "--task", task.name, "--workspace", str(task / "negatives" / "wrong-sum"))
    assert failed.returncode == 1 and "FAIL contract.calls" in failed.stdout
    unknown = _cli("grade", "--task", "no-such-task", "--workspace", str(tmp_path))
    assert unknown.returncode == 2 and "no such task" in unknown.stderr


COUNTER_SERVER = '''
import os
from mcp.server.mcpserver import MCPServer

mcp = MCPServer("counter")
state = {"n": 0}

@mcp.tool()
def bump(by: int) -> int:
    state["n"] += by
    return state["n"]

@mcp.resource("counter://value", mime_type="text/plain")
def value() -> str:
    return f"value={state['n']}"

@mcp.tool()
def hang(seconds: float) -> str:
    import time
    open("hanging", "w").write(str(os.getpid()))
    time.sleep(seconds)
    return "done"

mcp.run("streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
'''

COUNTER_CONTRACT = {
    "title": "counter", "entryCandidates": ["server.py"],
    "expectedTools": [{"name": "bump", "requiredProps": ["by"]}, {"name": "hang"}],
    "expectedResources": [{"uri": "counter://value", "mimeType": "text/plain"}],
    "calls": [
        {"tool": "bump", "args": {"by": 2},
         "readsBefore": [{"uri": "counter://value", "expect": {"type": "contains", "value": "value=0"}}],
         "readsAfter": [{"uri": "counter://value", "mimeType": "text/plain",
                         "expect": {"type": "contains", "value": "value=2"}}],
         "expect": {"type": "number-equals", "value": 2}},
        {"tool": "bump", "args": {"by": 3}, "expect": {"type": "number-equals", "value": 5}},
    ],
    "postCallResourceReads": [{"uri": "counter://value", "expect": {"type": "contains", "value": "value=5"}}],
}


def test_reads_before_and_after_calls_see_state(tmp_path: Path) -> None:
    grade = grade_workspace_sync(contract_of(COUNTER_CONTRACT), write_tree(tmp_path, {**REQS,
                                                                                     "server.py": COUNTER_SERVER}))
    assert grade.contract_pass, grade.first_failure
    assert [c.id for c in grade.checks][-5:] == [
        "resource-read:counter://value:1", "call:bump:1", "resource-read:counter://value:2", "call:bump:2",
        "post-call-resource-read:counter://value:1",
    ]


def test_a_stale_read_fails_at_calls(tmp_path: Path) -> None:
    contract = json.loads(json.dumps(COUNTER_CONTRACT))
    contract["calls"][0]["readsAfter"][0]["expect"]["value"] = "value=0"
    grade = grade_workspace_sync(contract_of(contract), write_tree(tmp_path, {**REQS, "server.py": COUNTER_SERVER}))
    assert grade.failure_code == "contract.calls"
    assert grade.first_failure.id == "resource-read:counter://value:2"
    assert "does not contain 'value=0'" in grade.first_failure.detail


STACK_SERVER = '''
import os
from mcp.server.mcpserver import MCPServer

mcp = MCPServer("stack")
items: list[int] = []

@mcp.tool()
def push(n: int) -> dict:
    items.append(n)
    return {"n": str(n) if n == 7 else n}  # 7 comes back as a string: a form broken at that call only

@mcp.tool()
def listing() -> dict:
    return {"count": len(items), "items": list(items)}  # in push order: sorted only while pushes ascend

mcp.run("streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
'''


def _stack_contract(pushes: list[object]) -> TaskContract:
    return contract_of({
        "title": "stack", "entryCandidates": ["server.py"],
        "expectedTools": [{"name": "push", "forms": [
            {"when": "ok", "expect": [{"type": "json-type", "path": "n", "value": "integer"}]},
            {"when": "error", "expect": [{"type": "not-contains", "value": "Traceback"}]}]}, {"name": "listing"}],
        "invariants": [{"after": ["push"], "call": {"tool": "listing"},
                        "expect": [{"type": "sorted", "path": "items"},
                                   {"type": "length-equals", "path": "items", "valuePath": "count"}]}],
        "calls": [{"tool": "push", "args": {"n": n}, "isError": not isinstance(n, int)} for n in pushes],
    })


@pytest.mark.parametrize(("pushes", "breaks_at", "why"), [
    ([1, 2, 7], "form:push:4:1", "expected a JSON integer at path 'n', found string"),
    ([1, 3, 2], "invariant:1:after:call:push:4", "not in ascending order at path 'items': 2 comes after 3"),
])
def test_forms_and_invariants_hold_at_every_exchange(tmp_path: Path, pushes: list[int], breaks_at: str,
                                                     why: str) -> None:
    """Forms are checked on every result of their tool (those of the outcome they name), invariants after every
    call of the tools they follow (an error call too), each a check of its own: the first failure names the
    exchange that broke the rule, the ones before it passed."""
    contract = _stack_contract(["x", *pushes])
    grade = grade_workspace_sync(contract, write_tree(tmp_path, {**REQS, "server.py": STACK_SERVER}))
    assert grade.failure_code == "contract.calls"
    ran = [c.id for c in grade.checks if c.stage == "calls" and c.detail != "blocked by calls"]
    assert ran[:8] == ["call:push:1", "form:push:1:2", "invariant:1:after:call:push:1",  # no ok-form on the error
                       "call:push:2", "form:push:2:1", "invariant:1:after:call:push:2",  # no error-form on an ok
                       "call:push:3", "form:push:3:1"]
    assert ran[-1] == breaks_at == grade.first_failure.id
    assert why in grade.first_failure.detail


def test_a_call_that_times_out_fails_and_the_session_is_torn_down(tmp_path: Path, own_scratch: list[Path]) -> None:
    contract = {**COUNTER_CONTRACT, "calls": [{"tool": "hang", "args": {"seconds": 60}, "timeoutSeconds": 1}],
                "postCallResourceReads": []}
    workspace = write_tree(tmp_path, {**REQS, "server.py": COUNTER_SERVER})
    grade = grade_workspace_sync(contract_of(contract), workspace)
    assert grade.failure_code == "contract.calls" and "timed out" in grade.first_failure.detail
    assert left_running(own_scratch) == []


GRADE_IN_CHILD = """
import sys
import time
from pathlib import Path
from mcp_evals_pipeline.contracts.task import TaskContract
from mcp_evals_pipeline.grader import grade_workspace_sync
grade_workspace_sync(TaskContract.model_validate_json(Path(sys.argv[1]).read_text()), Path(sys.argv[2]))
"""


def test_server_dies_with_a_grader_that_is_killed_hard(tmp_path: Path) -> None:
    """No finally runs on SIGKILL: the kernel's parent-death signal takes the server down."""
    contract = {**COUNTER_CONTRACT, "calls": [{"tool": "hang", "args": {"seconds": 120}, "timeoutSeconds": 100}],
                "postCallResourceReads": []}
    (tmp_path / "task.json").write_text(json.dumps(contract))
    workspace = write_tree(tmp_path / "ws", {**REQS, "server.py": COUNTER_SERVER})
    grader = subprocess.Popen([sys.executable, "-c", GRADE_IN_CHILD, str(tmp_path / "task.json"), str(workspace)],
                              cwd=REPO)
    before = set(scratch_base().glob("grade-*"))
    try:
        deadline = time.monotonic() + 120
        while not (hanging := [p for p in scratch_base().glob("grade-*/workspace/hanging")
                               if p.parent.parent not in before]):
            assert time.monotonic() < deadline and grader.poll() is None, "the server never reached the call"
            time.sleep(0.1)
        scratch = hanging[0].parent.parent
        assert running_under(scratch), "the server should be running now"
        grader.kill()
        grader.wait()
        deadline = time.monotonic() + 10
        while running_under(scratch):  # by working directory: the server runs in its own pid namespace
            assert time.monotonic() < deadline, "the server outlived its grader"
            time.sleep(0.1)
    finally:
        grader.kill()
    # No finally ran, so the killed grading's scratch is still there; the next grading removes it.
    assert scratch.is_dir()
    os.utime(scratch / LOCK_FILE, (time.time() - LOCK_GRACE_S - 1,) * 2)  # as if it had started a while ago
    grade_workspace_sync(contract_of({"title": "next", "entryCandidates": ["server.py"]}),
                         write_tree(tmp_path / "next", {"notes.txt": ""}))
    assert not scratch.exists()
    assert not (workspace / "hanging").exists()  # the server ran in the copy


@pytest.mark.parametrize("taken", [1, 3])
def test_a_port_taken_on_the_host_is_no_matter_to_a_boxed_server(
        tmp_path: Path, minimal_contract: dict, monkeypatch: pytest.MonkeyPatch, taken: int) -> None:
    """A port handed out and released can be bound on the host by another process (another trial's server, a fake)
    before the server under test binds it. The boxed server binds PORT in a network namespace of its own, so the
    host's listeners cannot take it from it; the grader reaches it through its relay (on another host port when
    that one is held), and never through the foreign listener, which gets no connection at all."""
    import socket

    from mcp_evals_pipeline import procs

    holders = []
    real_free_port = procs.free_port

    def contended() -> int:
        if len(holders) < taken:
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            sock.listen()
            sock.setblocking(False)
            holders.append(sock)
            return sock.getsockname()[1]
        return real_free_port()

    monkeypatch.setattr(procs, "free_port", contended)
    try:
        grade = grade_workspace_sync(contract_of(minimal_contract),
                                     write_tree(tmp_path, {**REQS, "server.py": MINIMAL_SERVER}))
        held = [sock.getsockname()[1] for sock in holders]
        for sock in holders:  # nothing of the grading ever connected to the foreign listener
            with pytest.raises(BlockingIOError):
                sock.accept()
    finally:
        for sock in holders:
            sock.close()
    assert len(held) == 1  # the first port served: no second attempt
    assert grade.contract_pass, grade.first_failure
    start = next(c for c in grade.checks if c.id == "start")
    assert f"port {held[0]} (PORT env respected)" in start.detail
