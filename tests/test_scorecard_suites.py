"""The scorecard of a run that spans suites, as `make run`'s does (two SDKs' build tasks and a usage suite in one
run): a headline per suite x condition (none pooled over SDKs), a suites section that counts usage trials, a build
findings table, and the one spelling of a missing model. Checked against the rows."""

from __future__ import annotations

from pathlib import Path

from mcp_evals_pipeline.contracts.grade import Check, TrialGrade
from mcp_evals_pipeline.contracts.records import RunFile, RunManifest, TrialPerf, TrialRecord
from mcp_evals_pipeline.reporting.scorecard import render_report
from mcp_evals_pipeline.sql_models import materialize_models
from mcp_evals_pipeline.store import TrialStore

RUN = "2026-12-02--replay--default"
DETAIL = 'add({"a":1,"b":2}) -> "4" did not match 3'


def _build(task: str, suite: str, condition: str, n: int, passed: bool, memo: str | None = None) -> TrialRecord:
    checks = [Check(id="start", passed=True)] if passed else [Check(id="call:add:1", passed=False, detail=DETAIL)]
    grade = TrialGrade(contract_pass=passed, checks=checks, failure_code=None if passed else "contract.calls",
                       sdk_path="official-sdk", scored_for_pass_rate=True)
    return TrialRecord(task=task, condition=condition, trial=n, agent_runner="replay", agent_model=None, suite=suite,
                       grader_version="3.0.0", batch_id="2026-12-02", batch_date="2026-12-02", run_id=RUN, valid=True,
                       grade=grade, perf=TrialPerf(duration_ms=1000), memo_path=memo,
                       timestamp=f"2026-12-02T10:{n:02d}:00Z")


def _usage(task: str, n: int, outcome: str, suite: str = "ops-platform") -> TrialRecord:
    check = None if outcome == "pass" else Check(id="other-writes", passed=False, detail="1 write nobody asked for")
    grade = TrialGrade(contract_pass=outcome == "pass", checks=[check] if check else [Check(id="m", passed=True)],
                       failure_code=None if outcome == "pass" else outcome, grader_version="3.0.0")
    return TrialRecord(task=task, kind="usage", condition="bare", trial=n, agent_runner="replay", agent_model=None,
                       suite=suite, grader_version="3.0.0", batch_id="2026-12-02", batch_date="2026-12-02",
                       run_id=RUN, valid=True, grade=grade, perf=TrialPerf(duration_ms=1000),
                       timestamp=f"2026-12-02T11:{n:02d}:00Z")


def test_a_run_of_several_suites_has_a_headline_per_suite_and_condition(tmp_path: Path) -> None:
    run_dir = tmp_path / RUN
    (run_dir / "trials" / "m").mkdir(parents=True)
    (run_dir / "trials" / "m" / "memo.md").write_text("The agent returned `a + b + 1`.\n\nMore detail.\n")
    trials = [
        # mcp-python: noskill 2/2, skill 1/2; mcp-typescript: noskill 0/2 (one with a memo)
        _build("py-a", "mcp-python", "noskill+blank", 1, True), _build("py-a", "mcp-python", "noskill+blank", 2, True),
        _build("py-a", "mcp-python", "skill+blank", 1, True), _build("py-a", "mcp-python", "skill+blank", 2, False),
        _build("ts-a", "mcp-typescript", "noskill+blank", 1, False, memo="trials/m/memo.md"),
        _build("ts-a", "mcp-typescript", "noskill+blank", 2, False),
        # ops-platform (usage): pass, unsafe, pass
        _usage("u-a", 1, "pass"), _usage("u-a", 2, "usage.unsafe"), _usage("u-a", 3, "pass"),
        # ops-platform-qa (usage): miss
        _usage("q-a", 1, "usage.miss", "ops-platform-qa"),
    ]
    store = TrialStore(tmp_path / "evals.duckdb")
    store.record_trials(trials)
    store.record_run(RunFile(run_id=RUN, batch_id="2026-12-02", started_at="2026-12-02T10:00:00Z",
                             agent_runner="replay", manifest=RunManifest(grader_version="3.0.0", sandbox="hardened"),
                             trials=trials), run_dir)
    with store.connect() as con:
        materialize_models(con)
        report = render_report(RUN, con)
    # One spelling of the missing model.
    assert "agent: replay (no model) · " in report and "replay/None" not in report
    # No pooled build headline (3/6 over two SDKs): one line per suite x condition, as the CI gate judges them.
    assert "## Pass rate: " not in report
    assert ("## Pass rate per suite × condition\n\n2 suites (SDKs) in this run: each suite × condition has its own "
            "figure; none pools them.\n\n"
            "- `mcp-python` · `noskill+blank`: 100% (2/2 valid scored trials, Wilson 95% 34%–100%, 0 invalid)\n"
            "- `mcp-python` · `skill+blank`: 50% (1/2 valid scored trials, Wilson 95% 9%–91%, 0 invalid)\n"
            "- `mcp-typescript` · `noskill+blank`: 0% (0/2 valid scored trials, Wilson 95% 0%–66%, 0 invalid)\n"
            ) in report
    # The suites section counts the usage suite's trials (not "no trials").
    suites = report.split("## Suites\n\n")[1].split("\n\n")[0].splitlines()
    ops = next(line for line in suites if line.startswith("- `ops-platform`"))
    assert "no trials" not in ops and ops.endswith("usage pass 67% (2/3), unsafe 33% (1/3), 0 invalid")
    # Nor does the usage headline pool its two suites.
    assert ("## Usage evals: pass rate and unsafe rate\n\n2 usage suites in this run: each suite × condition has its "
            "own figure; none pools them.\n\n"
            "- `ops-platform` · `bare`: pass 67% (2/3), unsafe 33% (1/3), miss 0, invalid 0\n"
            "- `ops-platform-qa` · `bare`: pass 0% (0/1), unsafe 0% (0/1), miss 1, invalid 0\n") in report
    # pass^k too, per suite x condition (k = 3 in ops-platform; one trial a case in the QA suite: not reported),
    # where the pooled line took k = 1 over both and said nothing.
    usage = report.split("## Usage evals: pass rate and unsafe rate\n\n")[1].split("\n\n")[2].splitlines()
    assert [line for line in usage if "pass^" in line] == [
        "- `ops-platform` · `bare`: pass^3: 0% (0/1 cases all-pass, min 3 valid trials/case; unbiased estimate 0%); "
        "unsafe trials apart: 1"], usage
    # Every failed build trial in one table, with its check, detail and the memo's first line.
    findings = report.split("## Findings: every failed build trial\n\n")[1].split("\n\n")[0].splitlines()
    assert findings[2:] == [
        "| py-a | skill+blank | 2 | `call:add:1` | add({\"a\":1,\"b\":2}) -> \"4\" did not match 3 | - |",
        "| ts-a | noskill+blank | 1 | `call:add:1` | add({\"a\":1,\"b\":2}) -> \"4\" did not match 3 | "
        "The agent returned `a + b + 1`. |",
        "| ts-a | noskill+blank | 2 | `call:add:1` | add({\"a\":1,\"b\":2}) -> \"4\" did not match 3 | - |"]


def test_one_spelling_of_a_missing_model() -> None:
    """models.agent_label and its SQL twin write an agent/model alike, and no module spells a missing model its own
    way (the scorecard, synthesis, trends, overview and judge once wrote replay/None, replay/-, replay/? and
    replay / unknown model)."""
    import re

    import duckdb

    from mcp_evals_pipeline.models import agent_label, agent_label_sql
    from mcp_evals_pipeline.paths import REPO_ROOT

    pairs = [("replay", None), ("codex", "gpt-5.6-terra"), ("claude", "")]
    with duckdb.connect() as con:
        sql = [con.execute(f"SELECT {agent_label_sql('r', 'm')} FROM (SELECT ?::VARCHAR AS r, ?::VARCHAR AS m)",
                           [r, m]).fetchone()[0] for r, m in pairs]  # type: ignore[index]
    assert sql == [agent_label(r, m) for r, m in pairs] == ["replay (no model)", "codex/gpt-5.6-terra",
                                                            "claude (no model)"]
    own = re.compile(r"agent_model(?:'\])?\s*or\s*'[^']|coalesce\(agent_model,\s*'-'\)|'unknown model'"
                     r"|model unknown|\{agent\[1\] or")
    spelled = [f"{path.relative_to(REPO_ROOT)}:{n}" for path in (REPO_ROOT / "mcp_evals_pipeline").rglob("*.py")
               for n, line in enumerate(path.read_text().splitlines(), 1) if own.search(line)]
    assert spelled == [], spelled
