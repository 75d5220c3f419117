"""verify-tasks over the real suite, and proof that it catches a broken golden, a "fixed" negative, a negative
failing at another stage, and refuses a negative declaring a code the ladder never gives (infra.*, a typo)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_evals_pipeline.contracts.grade import TrialGrade
from mcp_evals_pipeline.tasks.catalog import Solution, TaskLoadError, load_task
from mcp_evals_pipeline.verify import VerifyResult

from .conftest import REPO, TASKS


def _verify(*args: str, tasks_dir: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if tasks_dir is not None:
        env["MCP_EVALS_TASKS_DIR"] = str(tasks_dir)
    return subprocess.run([sys.executable, "-m", "mcp_evals_pipeline.cli", "verify-tasks", *args], cwd=REPO,
                          env=env, capture_output=True, text=True, check=False, timeout=600)


SUITES = {name: suite for name, suite in json.loads((TASKS / "suites.json").read_text()).items()
          if isinstance(suite, dict)}
# What each build suite's quick run must still catch, whatever its negatives say (a deleted negative is a hole);
# the TypeScript suite's bundle step besides.
FLOOR = {"contract.install", "contract.typecheck", "contract.start", "contract.calls", "contract.input_required",
         "contract.upstream", "contract.views", "contract.oauth"}
FLOOR_OF = {"mcp-use": FLOOR | {"contract.build"}}
# About how long each takes alone: mcp-use's TypeScript solutions are the longest by far (a tsc and a bundle each).
SECONDS = {"mcp-use": 300, "ops-platform": 150}


def test_every_task_is_in_a_suite_so_the_quick_runs_below_cover_it() -> None:
    named = {task for suite in SUITES.values() for task in suite["tasks"]}
    on_disk = {p.name for p in TASKS.iterdir() if (p / "task.json").is_file()}
    assert on_disk <= named, f"tasks in no suite, which no quick run below grades: {sorted(on_disk - named)}"


@pytest.mark.parametrize("suite", [pytest.param(name, marks=pytest.mark.long(SECONDS.get(name, 120)))
                                   for name in sorted(SUITES)])
def test_every_legitimate_solution_passes_and_every_stage_still_catches_its_negative(suite: str) -> None:
    """verify-tasks --quick, one suite per test (so the suites are graded side by side): every golden and alternate
    passes, and one negative for each failure code the suite's negatives declare fails exactly there. All the
    solutions of every suite take ~18 min on 2 cores, mostly tsc parsing mcp-use's types (bench/grader_bench.py);
    `mcp-evals verify-tasks` grades all of it."""
    done = _verify("--quick", "--json", "--suite", suite)
    assert done.stdout.strip(), f"verify-tasks printed no report (exit {done.returncode}): {done.stderr[-3000:]}"
    report = json.loads(done.stdout)
    bad = [(r["task"], r["solution"], r["expected"], r["got"], r["why"]) for r in report["results"] if not r["ok"]]
    assert done.returncode == 0 and report["ok"], bad or report["taskErrors"]
    results = report["results"]
    tasks = [load_task(TASKS / task_id) for task_id in SUITES[suite]["tasks"]]
    build = {t.id for t in tasks if t.kind == "build"}
    usage = {t.id for t in tasks if t.kind == "usage"}
    assert {r["task"] for r in results if r["kind"] == "golden"} == build
    # A usage task's marker is proven by its sessions: the oracle passes, each bad one at its outcome.
    assert {r["task"] for r in results if r["kind"] == "oracle"} == usage
    assert {r["kind"] for r in results} == ({"golden", "alternate", "negative"} if build else set()) | (
        {"oracle", "session"} if usage else set())
    declared = {s.expected_failure_code for t in tasks for s in t.solutions if s.kind == "negative" and not s.blind}
    caught = {r["expected"] for r in results if r["kind"] == "negative"}
    assert caught == declared, f"failure codes no quick negative proves: {sorted(declared - caught)}"
    if build:
        floor = FLOOR_OF.get(suite, FLOOR)
        assert caught >= floor, sorted(floor - caught)
    assert re.search(r"\[\s*1/\d+\] ok", done.stderr), "progress is shown while it runs"


def _copy_task(tmp_path: Path, task_id: str) -> Path:
    root = tmp_path / "tasks"
    shutil.copytree(TASKS / task_id, root / task_id)
    return root


def _only(root: Path, task_id: str, *keep: str) -> Path:
    """The copied task with only the solutions named (golden, negatives/<name>...): fewer servers to grade."""
    task = root / task_id
    shutil.rmtree(task / "alternates", ignore_errors=True)
    for negative in (task / "negatives").iterdir():
        if f"negatives/{negative.name}" not in keep:
            shutil.rmtree(negative)
    return task


def test_a_broken_golden_fails_verification(tmp_path: Path) -> None:
    root = _copy_task(tmp_path, "py-v4-01-basic-tool-server")
    server = root / "py-v4-01-basic-tool-server" / "golden" / "server.py"
    server.write_text(server.read_text().replace("return a + b", "return a + b + 1"))
    done = _verify("--task", "py-v4-01-basic-tool-server", tasks_dir=root)
    assert done.returncode == 1
    assert "golden:golden expected pass, got contract.calls" in done.stderr


def test_a_fixed_negative_fails_verification(tmp_path: Path) -> None:
    root = _copy_task(tmp_path, "py-v4-01-basic-tool-server")
    task = root / "py-v4-01-basic-tool-server"
    shutil.copy(task / "golden" / "server.py", task / "negatives" / "wrong-sum" / "server.py")
    done = _verify("--task", "py-v4-01-basic-tool-server", tasks_dir=root)
    assert done.returncode == 1
    assert "negative:wrong-sum expected contract.calls, got pass" in done.stderr


def test_a_negative_failing_at_another_stage_fails_verification(tmp_path: Path) -> None:
    root = _copy_task(tmp_path, "py-v4-01-basic-tool-server")
    declaration = root / "py-v4-01-basic-tool-server" / "negatives" / "wrong-sum" / "negative.json"
    declaration.write_text(json.dumps({"failureCode": "contract.tools", "why": "declared at the wrong stage"}))
    done = _verify("--task", "py-v4-01-basic-tool-server", tasks_dir=root)
    assert done.returncode == 1
    assert "negative:wrong-sum expected contract.tools, got contract.calls" in done.stderr


def test_a_negative_caught_by_another_requirements_check_fails_verification(tmp_path: Path) -> None:
    """A negative names the one requirement it breaks; failing at a check of some other requirement means the
    contract does not test what the negative was written to break."""
    task_id = "py-v4-01-basic-tool-server"
    root = _copy_task(tmp_path, task_id)
    _only(root, task_id, "negatives/wrong-sum")
    declaration = root / task_id / "negatives" / "wrong-sum" / "negative.json"
    declared = json.loads(declaration.read_text())
    declaration.write_text(json.dumps({**declared, "violates": "add-rejects-non-integers"}))
    done = _verify("--task", task_id, tasks_dir=root)
    assert done.returncode == 1
    assert "violates 'add-rejects-non-integers' but first failed at call:add:1, which checks add-returns-sum" \
        in done.stderr, done.stderr


def test_a_negative_breaking_elsewhere_than_its_breaks_at_fails_verification(tmp_path: Path) -> None:
    """A negative that declares where it breaks (`breaksAt`) must first fail exactly there: wrong-sum breaks at the
    first add, so declaring the second (a later exchange) is refused, naming both."""
    task_id = "py-v4-01-basic-tool-server"
    root = _copy_task(tmp_path, task_id)
    _only(root, task_id, "negatives/wrong-sum")
    declaration = root / task_id / "negatives" / "wrong-sum" / "negative.json"
    declared = json.loads(declaration.read_text())
    declaration.write_text(json.dumps({**declared, "breaksAt": "call:add:2"}))
    done = _verify("--json", "--task", task_id, tasks_dir=root)
    assert done.returncode == 1, done.stderr
    negative = json.loads(done.stdout)["results"][-1]
    assert (negative["solution"], negative["got"], negative["ok"]) == ("wrong-sum", "contract.calls", False)
    assert negative["why"].startswith("breaks at call:add:2 but first failed at call:add:1: "), negative["why"]


@pytest.mark.parametrize(("breaks_at", "message"), [
    ("call:add:99", "breaksAt 'call:add:99' names no check of the contract; the closest is 'call:add:9'"),
    ("tools", "breaksAt 'tools' is a check of stage tools, but failureCode is contract.calls"),
])
def test_a_breaks_at_naming_no_check_of_its_stage_is_refused(tmp_path: Path, breaks_at: str, message: str) -> None:
    task_id = "py-v4-01-basic-tool-server"
    root = _copy_task(tmp_path, task_id)
    declaration = root / task_id / "negatives" / "wrong-sum" / "negative.json"
    declaration.write_text(json.dumps({**json.loads(declaration.read_text()), "breaksAt": breaks_at}))
    with pytest.raises(TaskLoadError) as refused:
        load_task(root / task_id)
    assert (refused.value.path, refused.value.field_path) == (declaration, "breaksAt")
    assert refused.value.message == message


def test_a_malformed_task_is_reported_and_fails_verification(tmp_path: Path) -> None:
    root = _copy_task(tmp_path, "py-v4-01-basic-tool-server")
    _only(root, "py-v4-01-basic-tool-server", "negatives/wrong-sum")
    broken = root / "v2-99-broken"
    shutil.copytree(root / "py-v4-01-basic-tool-server", broken)
    contract = json.loads((broken / "task.json").read_text())
    contract["id"] = "v2-99-broken"
    contract["expectedTools"][0]["requiredProps"] = "a"
    (broken / "task.json").write_text(json.dumps(contract))
    done = _verify(tasks_dir=root)
    assert done.returncode == 1
    assert f"{broken / 'task.json'}: field 'expectedTools[0].requiredProps'" in done.stderr
    assert "2/2 solutions graded as declared" in done.stdout  # the healthy task was still verified


def test_json_ok_is_false_when_a_solution_fails(tmp_path: Path) -> None:
    root = _copy_task(tmp_path, "py-v4-01-basic-tool-server")
    task = _only(root, "py-v4-01-basic-tool-server", "negatives/wrong-sum")
    server = task / "golden" / "server.py"
    server.write_text(server.read_text().replace("return a + b", "return a + b + 1"))
    done = _verify("--json", "--task", "py-v4-01-basic-tool-server", tasks_dir=root)
    report = json.loads(done.stdout)
    assert done.returncode == 1, done.stderr
    assert report["ok"] is False and report["taskErrors"] == []
    assert [(r["solution"], r["expected"], r["got"], r["ok"]) for r in report["results"]] == [
        ("golden", "pass", "contract.calls", False), ("wrong-sum", "contract.calls", "contract.calls", True)]
    assert report["results"][0]["why"].startswith("call:add:")  # the first failing check, for the reader
    assert "1/2 solutions graded as declared" in done.stderr


def test_a_negative_declaring_an_infra_code_is_refused_at_load(tmp_path: Path) -> None:
    root = _copy_task(tmp_path, "py-v4-01-basic-tool-server")
    declaration = root / "py-v4-01-basic-tool-server" / "negatives" / "wrong-sum" / "negative.json"
    declaration.write_text(json.dumps({"failureCode": "infra.grader", "why": "the grader cannot run it"}))
    done = _verify("--json", "--task", "py-v4-01-basic-tool-server", tasks_dir=root)
    report = json.loads(done.stdout)
    assert done.returncode == 1
    assert report["ok"] is False and report["results"] == []  # nothing of the task is counted
    assert report["taskErrors"] == [f"{declaration}: field 'failureCode': must be a contract.<stage> code"]


def test_a_negative_declaring_a_code_the_grader_never_gives_is_refused(tmp_path: Path) -> None:
    root = _copy_task(tmp_path, "py-v4-01-basic-tool-server")
    task = _only(root, "py-v4-01-basic-tool-server", "negatives/wrong-sum")
    declaration = task / "negatives" / "wrong-sum" / "negative.json"
    declaration.write_text(json.dumps({"failureCode": "contract.cals", "why": "a typo"}))
    done = _verify("--json", "--task", "py-v4-01-basic-tool-server", tasks_dir=root)
    report = json.loads(done.stdout)
    assert done.returncode == 1 and report["ok"] is False
    [golden, negative] = report["results"]
    assert golden["ok"] is True
    assert (negative["expected"], negative["got"], negative["ok"]) == ("contract.cals", "contract.calls", False)
    assert negative["why"].startswith("negative:wrong-sum declares failureCode 'contract.cals', which is not a code")
    assert "negative:wrong-sum declares failureCode 'contract.cals'" in done.stderr


def _grade(code: str | None) -> TrialGrade:
    return TrialGrade(contract_pass=code is None, checks=[], failure_code=code,
                      error="grader crashed" if code and code.startswith("infra.") else None)


REFUSED = ("infra.grader", "infra.sandbox", "contract.cals", "calls")


@pytest.mark.parametrize(("declared", "got", "ok"), [
    (None, None, True), (None, "contract.calls", False), (None, "infra.grader", False),
    ("contract.calls", "contract.calls", True), ("contract.calls", "contract.tools", False),
    ("contract.calls", None, False), ("contract.calls", "infra.grader", False),
    # Declarations verify-tasks refuses whatever the grade: an infra code (the grader could not judge: never a
    # negative's fail, even when a crashing grader agrees) and codes no stage of the ladder gives.
    *((code, code, False) for code in REFUSED),
])
def test_what_counts_as_graded_as_declared(tmp_path: Path, declared: str | None, got: str | None, ok: bool) -> None:
    kind = "golden" if declared is None else "negative"
    result = VerifyResult("t", Solution(kind, "s", tmp_path, declared), _grade(got), 0.1)
    assert result.ok is ok
    if declared in REFUSED:
        assert result.why == result.declaration_error
        assert f"negative:s declares failureCode {declared!r}, which is not a code" in (result.why or "")
    else:
        assert result.declaration_error is None


def test_blind_solutions_are_marked_graded_in_full_and_skipped_by_quick(tmp_path: Path) -> None:
    """A solution of the blind round (BLIND.json beside it) is marked blind by the catalog; `--quick` (CI) leaves
    it out (full verify-tasks grades every solution, naming it by its label); a negative.json saying `blind`
    without the note (or the note without `blind`) is refused, naming the file and the field."""
    task_id = "py-v4-01-basic-tool-server"
    root = _copy_task(tmp_path, task_id)
    task = _only(root, task_id, "negatives/wrong-sum")
    note = json.dumps({"kind": "broken", "author": "B1", "breaks": "the sum", "how": "adds one"})
    shutil.copytree(task / "golden", task / "alternates" / "blind-plain")
    (task / "alternates" / "blind-plain" / "BLIND.json").write_text(note)
    blind_negative = task / "negatives" / "blind-off-by-one"
    shutil.copytree(task / "negatives" / "wrong-sum", blind_negative)
    (blind_negative / "BLIND.json").write_text(note)
    declared = json.loads((blind_negative / "negative.json").read_text())
    (blind_negative / "negative.json").write_text(json.dumps({**declared, "blind": True}))

    loaded = load_task(task)
    assert [(s.label, s.blind) for s in loaded.solutions] == [
        ("golden:golden", False), ("alternate:blind-plain (blind)", True),
        ("negative:blind-off-by-one (blind)", True), ("negative:wrong-sum", False)]

    quick = json.loads(_verify("--quick", "--json", "--task", task_id, tasks_dir=root).stdout)
    assert [(r["solution"], r["blind"], r["ok"]) for r in quick["results"]] == [
        ("golden", False, True), ("wrong-sum", False, True)]

    (blind_negative / "BLIND.json").unlink()
    with pytest.raises(TaskLoadError) as refused:
        load_task(task)
    assert (refused.value.path, refused.value.field_path) == (blind_negative / "negative.json", "blind")


FLAKY_START = '''
import itertools

STARTS = {counter!r}
for starts in itertools.count(1):  # this start's number: the first start-<n> file it creates (atomic)
    try:
        os.close(os.open(f"{{STARTS}}/start-{{starts}}", os.O_CREAT | os.O_EXCL))
        break
    except FileExistsError:
        pass
EXTRA = starts % 2 == 0  # every second start of the server adds one to every sum
'''


def test_repeat_names_a_flaky_golden_and_not_a_stable_alternate(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """--repeat 3: the golden and alternates graded three times each (negatives once), and a solution whose
    outcome changed named with its three outcomes; the task is not remembered as proven. The golden is made flaky:
    its server counts its starts in a file outside the workspace and gets the sum wrong on every second one. A boxed
    server keeps nothing between gradings (as it must), so this grading runs unboxed, with the debugging opt-out:
    what is under test is the comparing of runs, not the boxes."""
    from mcp_evals_pipeline.tasks.catalog import load_task
    from mcp_evals_pipeline.verify import proof_key, still_proven

    task_id = "py-v4-01-basic-tool-server"
    root = _copy_task(tmp_path, task_id)
    task = _only(root, task_id, "negatives/wrong-sum")
    shutil.copytree(task / "golden", task / "alternates" / "stable")
    server = task / "golden" / "server.py"
    source = server.read_text().replace("return a + b", "return a + b + EXTRA")
    head, main = source.split('\nif __name__ == "__main__":')
    server.write_text(head + FLAKY_START.format(counter=str(tmp_path / "starts")) + '\nif __name__ == "__main__":'
                      + main)
    unboxed = {"MCP_EVALS_GRADER_BOX": "0", "MCP_EVALS_UNSAFE_UNBOXED_GRADING": "1"}
    for name, value in unboxed.items():
        monkeypatch.setenv(name, value)  # the subprocess's settings: the proof key below is the one it uses
    (tmp_path / "starts").mkdir()
    done = _verify("--task", task_id, "--repeat", "3", "--workers", "3", "--json", tasks_dir=root)
    report = json.loads(done.stdout)
    assert done.returncode == 1 and report["ok"] is False, done.stderr[-3000:]
    assert len(list((tmp_path / "starts").iterdir())) == 3  # the golden's server started once per run
    # The runs share one pool: which of the golden's gradings got the second start is not fixed, so neither is the
    # order of its outcomes; the stable copy and the negative (graded once) are as declared.
    assert [(r["solution"], r["ok"]) for r in report["results"][1:]] == [("stable", True), ("wrong-sum", True)]
    [flaky] = report["flaky"]
    outcomes = flaky.pop("outcomes")
    assert report["repeat"] == 3 and flaky == {"task": task_id, "kind": "golden", "solution": "golden"}
    assert sorted(outcomes) == ["contract.calls at call:add:1", "pass", "pass"]
    assert f"FLAKY {task_id} golden:golden changed between runs: {', '.join(outcomes)}" in done.stderr
    assert "stable changed" not in done.stderr and "; 1 flaky over 3 runs" in done.stderr
    assert len(re.findall(r"\(\S+s\) again", done.stderr)) == 4  # golden and stable, twice more each
    assert not still_proven(load_task(task), proof_key(load_task(task)))
