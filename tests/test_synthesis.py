"""The weekly synthesis: hand-computed figures over a small DuckDB, the model part against a real local
OpenAI-compatible server, Slack against a local HTTP server, and the results-branch mode over real legacy runs."""

from __future__ import annotations

import dataclasses
import json
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import duckdb
import pytest

from mcp_evals_pipeline.contracts.grade import Check, TrialGrade
from mcp_evals_pipeline.contracts.records import TrialPerf, TrialRecord
from mcp_evals_pipeline.contracts.transcript import TranscriptEvent
from mcp_evals_pipeline.models import SYNTHESIS_MODEL
from mcp_evals_pipeline.store import TrialStore
from mcp_evals_pipeline.synthesis import (
    SynthesisError,
    build_prompt,
    compute_week_stats,
    render_stats,
    stats_from_results_dir,
    stats_json,
    synthesize,
)
from tests.support.openai_server import ScriptedOpenAI, failure, reply

END = "2026-11-30"  # a Monday: the window is Tue 2026-11-24 .. Mon 2026-11-30
ENTRY_DETAIL = "no entry file found (tried: server.py, main.py)"
ADD_DETAIL = 'add({"a":2,"b":3}) -> "6" did not match {"type":"contains","value":"5"}'


def _grade(outcome: str, check: str | None = None, detail: str | None = None, scored: bool = True,
           version: str = "1.0.0") -> TrialGrade:
    if outcome == "pass":
        return TrialGrade(contract_pass=True, checks=[Check(id="install", passed=True)], failure_code=None,
                          scored_for_pass_rate=scored, sdk_path="official-sdk", grader_version=version)
    if outcome == "invalid":
        return TrialGrade(contract_pass=False, checks=[], failure_code=detail, scored_for_pass_rate=scored,
                          grader_version=version)
    assert check
    stage = check.split(":")[0].replace("call", "calls")
    return TrialGrade(contract_pass=False, checks=[Check(id="install", passed=True),
                                                   Check(id=check, passed=False, detail=detail)],
                      failure_code=f"contract.{stage}", scored_for_pass_rate=scored, sdk_path="official-sdk",
                      grader_version=version)


def _record(task: str, day: str, trial: int, grade: TrialGrade, condition: str = "noskill+blank",
            duration_s: int | None = None, turns: int | None = None) -> TrialRecord:
    valid = grade.contract_pass or not (grade.failure_code or "").startswith("infra.")
    name = f"{task}--{condition}--t{trial}"
    return TrialRecord(
        task=task, condition=condition, trial=trial, agent_runner="codex", agent_model="gpt-5.6-terra",
        batch_id=f"batch-{day}", batch_date=day, run_id=f"run-{day}", valid=valid,
        invalid_reason=None if valid else grade.failure_code, grade=grade,
        perf=TrialPerf(duration_ms=None if duration_s is None else duration_s * 1000, turns=turns,
                       cost_usd=0.10 if valid else None),
        grader_version=grade.grader_version, memo_path=f"trials/{name}/memo.md",
        transcript_path=f"trials/{name}/transcript.jsonl", timestamp=f"{day}T15:00:00Z",
    )


def dataset() -> list[TrialRecord]:
    """The hand-built week. Scored valid: alpha 5 (+1 invalid) + alpha skill 2 + beta 6 + gamma 7 = 20, passing
    4 + 1 + 0 + 6 = 11. Static (source-imports): 2 valid (1 pass) + 1 invalid. One alpha trial lies outside."""
    P = _grade("pass")
    wed, fri, mon = "2026-11-25", "2026-11-27", "2026-11-30"
    durations = iter([60, 70, 80, 90, 100, 110, 120, 130, 140, 150, 160])  # the 11 passes: median 110 s
    records = [
        _record("t-alpha", wed, 1, P, duration_s=next(durations), turns=10),
        _record("t-alpha", wed, 2, P, duration_s=next(durations), turns=10),
        _record("t-alpha", wed, 3, _grade("fail", "call:add:1", ADD_DETAIL)),
        _record("t-alpha", fri, 1, P, duration_s=next(durations), turns=10),
        _record("t-alpha", fri, 2, P, duration_s=next(durations), turns=10),
        _record("t-alpha", fri, 3, _grade("invalid", detail="infra.agent")),
        _record("t-alpha", fri, 1, P, condition="skill+blank", duration_s=next(durations), turns=10),
        _record("t-alpha", fri, 2, _grade("fail", "call:add:1", ADD_DETAIL), condition="skill+blank"),
        *[_record("t-beta", wed, i, _grade("fail", "entry", ENTRY_DETAIL)) for i in (1, 2, 3)],
        _record("t-beta", fri, 1, _grade("fail", "entry", ENTRY_DETAIL)),
        _record("t-beta", fri, 2, _grade("fail", "entry", ENTRY_DETAIL)),
        _record("t-beta", fri, 3, _grade("fail", "start", "server exited with code 1")),
        *[_record("t-gamma", wed, i, P, duration_s=next(durations), turns=10) for i in (1, 2, 3)],
        _record("t-gamma", fri, 1, P, duration_s=next(durations), turns=20),
        _record("t-gamma", fri, 2, P, duration_s=next(durations), turns=20),
        _record("t-gamma", fri, 3, _grade("fail", "tools", "missing tool list_items")),
        _record("t-gamma", mon, 1, _grade("pass", version="1.1.0"), duration_s=next(durations), turns=20),
        _record("t-static", wed, 1, _grade("pass", scored=False)),
        _record("t-static", wed, 2, _grade("fail", "imports", "mcp-use/server not imported", scored=False)),
        # Like the earlier harness: an infra failure's grade says unscored even for a scored task. This one is on a
        # static task, so it must be counted under static adoption, not the headline.
        _record("t-static", wed, 3, _grade("invalid", detail="infra.sandbox", scored=False)),
        _record("t-alpha", "2026-11-20", 1, _grade("fail", "call:add:1", ADD_DETAIL)),  # outside the window
    ]
    assert next(durations, None) is None
    return records


MEMO_BETA = ("The agent wrote `app/server.py` and never created `server.py`; it said "
             "`I'll keep the package layout under app/`.")
TRANSCRIPT_ONLY = "python -m app.server listening on 8123"


@pytest.fixture
def week(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> TrialStore:
    """The dataset in a fresh DuckDB and results dir (both through the project's own environment variables), with
    two memos and a transcript on disk in the seed layout."""
    results = tmp_path / "results"
    monkeypatch.setenv("MCP_EVALS_RESULTS_DIR", str(results))
    monkeypatch.setenv("MCP_EVALS_DB", str(tmp_path / "db" / "evals.duckdb"))
    monkeypatch.delenv("SLACK_WEBHOOK_URL", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("MCP_EVALS_REPORT_BASE_URL", raising=False)
    store = TrialStore()
    store.record_trials(dataset())
    trial_dir = results / "runs" / "run-2026-11-25" / "trials" / "t-beta--noskill+blank--t1"
    trial_dir.mkdir(parents=True)
    (trial_dir / "memo.md").write_text(MEMO_BETA + "\n")
    (trial_dir / "transcript.jsonl").write_text(
        TranscriptEvent(seq=1, t_ms=0, type="tool_result", text=TRANSCRIPT_ONLY).model_dump_json() + "\n")
    skipped_dir = results / "runs" / "run-2026-11-27" / "trials" / "t-gamma--noskill+blank--t3"
    skipped_dir.mkdir(parents=True)
    (skipped_dir / "memo.md").write_text("<!-- judge: status=skipped -->\n# Judge memo\n\nJudge skipped: no key.\n")
    return store


def test_week_stats_hand_computed(week: TrialStore) -> None:
    stats = compute_week_stats(week, END, days=7)
    assert (str(stats.start_date), str(stats.end_date)) == ("2026-11-24", "2026-11-30")
    assert (stats.trials, stats.valid, stats.invalid) == (24, 22, 2)  # the 2026-11-20 trial is outside
    # Headline: invalid trials and the source-imports task never enter the denominator; both invalid trials are
    # shown beside it (as in the scorecard's pass_rate model).
    assert (stats.headline.passed, stats.headline.total, stats.headline.invalid) == (11, 20, 2)
    assert stats.headline.fraction() == "11/20 (55%)"
    assert {r.name: (r.passed, r.total, r.invalid) for r in stats.by_task} == {
        "t-alpha": (5, 7, 1), "t-beta": (0, 6, 0), "t-gamma": (6, 7, 0)}
    assert {r.name: (r.passed, r.total, r.invalid) for r in stats.by_condition} == {
        "noskill+blank": (10, 18, 2), "skill+blank": (1, 2, 0)}
    assert {r.name: (r.passed, r.total) for r in stats.by_batch} == {
        "2026-11-25": (5, 9), "2026-11-27": (5, 10), "2026-11-30": (1, 1)}
    assert {r.name: (r.passed, r.total) for r in stats.by_agent} == {"codex/gpt-5.6-terra": (11, 20)}
    # The infra trial's unscored grade neither makes it a static-adoption trial nor a headline one.
    assert [(r.name, r.passed, r.total, r.invalid) for r in stats.static_adoption] == [("t-static", 1, 2, None)]
    assert dict(stats.invalid_by_reason) == {"infra.agent": 1, "infra.sandbox": 1}
    # Failed valid *scored* trials (the static task's imports failure is static adoption's business).
    assert dict(stats.failure_codes) == {"contract.entry": 5, "contract.calls": 2, "contract.start": 1,
                                         "contract.tools": 1}
    assert dict(stats.sdk_paths) == {"official-sdk": 22}
    top = stats.failing_checks[0]
    assert (top.check, top.count, top.tasks, top.examples) == ("entry", 5, ["t-beta"], [ENTRY_DETAIL])
    assert (stats.failing_checks[1].check, stats.failing_checks[1].count) == ("call:add:1", 2)

    # pass^k per batch and agent. Wed: alpha 2/3, beta 0/3, gamma 3/3 -> k=3, 1 of 3 cells all-pass, estimate 1/3.
    # Fri: alpha 2/2 (one invalid left out), alpha skill 1/2, beta 0/3, gamma 2/3 -> k=2, 1 of 4 all-pass (25%),
    # estimate (1 + 0 + 0 + C(2,2)/C(3,2)) / 4 = 1/3. Mon: one cell with one trial -> not reportable.
    wed, fri, mon = stats.pass_k
    assert (wed.batch, wed.reportable, wed.k, wed.cells, wed.all_pass_cells) == (
        "2026-11-25 · codex/gpt-5.6-terra", True, 3, 3, 1)
    assert wed.value == pytest.approx(1 / 3) and wed.estimate == pytest.approx(1 / 3)
    assert (fri.reportable, fri.k, fri.cells, fri.all_pass_cells) == (True, 2, 4, 1)
    assert fri.value == pytest.approx(1 / 4) and fri.estimate == pytest.approx(1 / 3)
    assert (mon.batch, mon.reportable, mon.k) == ("2026-11-30 · codex/gpt-5.6-terra", False, None)

    # Medians over the 11 passing valid scored trials; cost = every valid trial's (22 x $0.10, the static task's
    # included: it cost money too), per success / 11 passes.
    perf = stats.performance
    assert perf.passing_trials == 11
    assert perf.medians["duration_ms"] == 110_000
    assert perf.medians["turns"] == 10
    assert perf.medians["tool_calls"] is None
    assert perf.total_cost_usd == pytest.approx(2.2)
    assert perf.cost_per_success_usd == pytest.approx(0.2)

    assert stats.grader_versions == [("1.0.0", 23), ("1.1.0", 1)]
    assert any("grader-version boundary" in n for n in stats.notes)
    assert any("pools 2 conditions" in n for n in stats.notes)

    # Suspects: beta's failures stop at `entry` 5 times out of 6 (>= 5 failures, >= 80%); alpha's 2 are too few.
    (suspect,) = stats.suspects
    assert (suspect.task, suspect.failures, suspect.at_check, suspect.check, suspect.same_detail) == (
        "t-beta", 6, 5, "entry", 5)

    # Failing trials with their memos, resolved through the seed layout runs/<runId>/<memoPath>.
    assert len(stats.failing) == 10
    by_name = {(f.trial_name, f.batch): f for f in stats.failing}
    beta1 = by_name[("t-beta--noskill+blank--t1", "2026-11-25")]
    assert beta1.memo_status == "written" and beta1.memo_text == MEMO_BETA + "\n"
    assert beta1.memo_path and beta1.memo_path.is_file()
    assert by_name[("t-gamma--noskill+blank--t3", "2026-11-27")].memo_status == "skipped"
    assert by_name[("t-beta--noskill+blank--t2", "2026-11-25")].memo_status == "missing"


def test_rendered_stats_state_the_suspect_and_the_headline(week: TrialStore) -> None:
    text = render_stats(compute_week_stats(week, END))
    assert "**11/20 (55%)** passing valid scored trials" in text
    assert ("t-beta: 5 of 6 failures (6 valid trials) stop at `entry`, all with the same detail" in text
            and "contract or grader bug" in text)
    assert "| t-static | 1/2 | 50% |\n" in text
    assert "| 2026-11-25 · codex/gpt-5.6-terra | 3 | 3 | 1/3 | 33% | 33% |" in text
    assert "| 2026-11-27 · codex/gpt-5.6-terra | 4 | 2 | 1/4 | 25% | 33% |" in text
    assert "not reportable" in text
    assert "| 110 s | 10 | - |" in text and "$2.20 | $0.20 |" in text


def test_prompt_carries_memos_suspects_and_rules(week: TrialStore) -> None:
    stats = compute_week_stats(week, END)
    prompt = build_prompt(stats)
    assert MEMO_BETA in prompt
    assert "## t-beta--noskill+blank--t1 (batch 2026-11-25, run run-2026-11-25)" in prompt
    assert "# Suspect tasks\n- t-beta:" in prompt
    assert "Judge skipped" not in prompt  # a skipped memo is not evidence; its trial is listed by detail
    assert "t-gamma--noskill+blank--t3 (batch 2026-11-27): contract.tools at `tools`" in prompt
    for heading in ("## Recurring struggles", "## Quoted evidence", "## Proposed issues for human review"):
        assert heading in prompt
    assert "docs, skill, SDK, templates, contract" in prompt


MODEL_SECTIONS = f"""## Recurring struggles
- Agents put the server under app/ instead of the entry file the contract names (t-beta).
- Tool results do not match the expected sum (t-alpha).

## Quoted evidence
- `I'll keep the package layout under app/` (t-beta--noskill+blank--t1)
- `{TRANSCRIPT_ONLY}` (t-beta--noskill+blank--t1)
- `the SDK crashed on import` (invented)

## Proposed issues for human review
1. t-beta entry path: category contract. Evidence: `app/server.py`. Check the prompt names server.py.
"""


def test_dry_run_prints_prompt_and_stats_without_a_request(week: TrialStore, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with ScriptedOpenAI([reply(content=MODEL_SECTIONS)]) as server:
        result = synthesize(END, 7, dry_run=True, base_url=server.base_url)
    assert server.requests == []
    printed = capsys.readouterr().out
    assert render_stats(result.stats) in printed
    assert build_prompt(result.stats, figures=False) in printed  # the prompt, its figures said once (above)
    assert result.report_path is None
    assert not (tmp_path / "results" / "synthesis").exists()


def test_replay_stays_out_of_every_figure_unless_named(week: TrialStore, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Recorded sessions (replay: not a real model, models.AGENT_PINS) never enter the headline unless named; the
    dry run says what it left out, and prints each figure once (not once more inside the prompt)."""
    replay = [_record("t-gamma", "2026-11-26", i, _grade("fail", "tools", "missing tool list_items")).model_copy(
        update={"agent_runner": "replay", "agent_model": None, "run_id": "run-replay", "batch_id": "b-replay"})
        for i in (1, 2, 3, 4)]
    week.record_trials(replay)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result = synthesize(END, 7, dry_run=True)
    printed = capsys.readouterr().out
    assert result.stats.headline.fraction() == "11/20 (55%)"
    assert ("Left out of every figure: replay (no model): 4 trial(s) (replay plays recorded sessions, not a model; "
            "name it with --agent to include it).") in printed
    for heading in ("## Computed figures", "### Pass rate by task", "### Suspect tasks", "- Note: Left out"):
        assert printed.count(heading) == 1, heading
    named = compute_week_stats(week, END, agents=("replay",))
    assert named.headline.fraction() == "0/4 (0%)" and [r.name for r in named.by_agent] == ["replay (no model)"]
    assert named.notes[:2] == [
        "Includes recorded sessions (replay, named with --agent): figures of the harness, not of an SDK.",
        "Left out of every figure: codex/gpt-5.6-terra: 24 trial(s)."]
    both = compute_week_stats(week, END, agents=("codex", "replay"))
    assert both.headline.fraction() == "11/24 (46%)"
    assert "The headline pools 2 agent models (codex/gpt-5.6-terra, replay (no model))." in both.notes
    with pytest.raises(SynthesisError, match="not an agent runner name"):
        compute_week_stats(week, END, agents=("x' OR true --",))


def test_headlines_are_per_suite_and_condition(week: TrialStore) -> None:
    """No headline pools SDKs: one figure per suite x condition (as the CI gate judges a batch), the pooled one
    said to be context."""
    week.record_trials([_record("t-py", "2026-11-25", 1, _grade("pass")).model_copy(update={"suite": "mcp-python"})])
    stats = compute_week_stats(week, END)
    assert [(r.name, r.passed, r.total, r.invalid) for r in stats.by_suite] == [
        ("(none) · noskill+blank", 10, 18, 2), ("(none) · skill+blank", 1, 2, 0),
        ("mcp-python · noskill+blank", 1, 1, 0)]
    text = render_stats(stats)
    assert ("Headlines, one per suite × condition (never pooled over SDKs or conditions):\n\n"
            "| suite · condition | passed / valid | pass rate | invalid (excluded) |\n|---|---|---|---|\n"
            "| (none) · noskill+blank | 10/18 | 56% | 2 |\n| (none) · skill+blank | 1/2 | 50% | 0 |\n"
            "| mcp-python · noskill+blank | 1/1 | 100% | 0 |\n\nAll of them pooled (context, not a headline):\n"
            "**12/21 (57%)** passing valid scored trials") in text


def test_dry_run_needs_no_key(week: TrialStore, monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    synthesize(END, 7, dry_run=True)
    assert "11/20 (55%)" in capsys.readouterr().out


def test_slack_without_webhook_fails_before_any_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "untouched" / "evals.duckdb"
    monkeypatch.setenv("MCP_EVALS_DB", str(db))
    monkeypatch.setenv("MCP_EVALS_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.delenv("SLACK_WEBHOOK_URL", raising=False)
    with ScriptedOpenAI([reply(content=MODEL_SECTIONS)]) as server, \
            pytest.raises(SynthesisError, match="SLACK_WEBHOOK_URL"):
        synthesize(END, 7, slack=True, base_url=server.base_url)
    assert server.requests == []
    assert not db.parent.exists() and not (tmp_path / "results").exists()  # nothing was opened or written
    with pytest.raises(SynthesisError, match="SLACK_WEBHOOK_URL"):
        synthesize(END, 7, slack=True, dry_run=True)


def test_missing_model_key_fails_before_any_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "untouched" / "evals.duckdb"
    monkeypatch.setenv("MCP_EVALS_DB", str(db))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(SynthesisError, match="OPENAI_API_KEY"):
        synthesize(END, 7)
    assert not db.parent.exists()


class SlackHook:
    """A local incoming-webhook stand-in that records every POST body."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, object]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                outer.bodies.append(json.loads(self.rfile.read(length)))
                self.send_response(200)
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/services/T000/B000/XXXX"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)


@pytest.fixture
def slack_hook() -> Iterator[SlackHook]:
    hook = SlackHook()
    hook.thread.start()
    yield hook
    hook.server.shutdown()
    hook.server.server_close()


def test_synthesize_writes_report_and_posts_to_slack(week: TrialStore, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch, slack_hook: SlackHook) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("SLACK_WEBHOOK_URL", slack_hook.url)
    with ScriptedOpenAI([reply(content=MODEL_SECTIONS)]) as server:
        result = synthesize(END, 7, slack=True, base_url=server.base_url)

    (request,) = server.requests
    assert request["model"] == SYNTHESIS_MODEL
    assert request["messages"][1]["content"] == result.prompt

    report_path = tmp_path / "results" / "synthesis" / "2026-11-30.md"
    assert result.report_path == report_path
    report = report_path.read_text()
    assert report.startswith("# Weekly synthesis: 2026-11-24 to 2026-11-30")
    # The code's tables verbatim, before the model's part, which is labelled as such.
    stats_text = render_stats(result.stats)
    assert stats_text in report
    model_label = f"## Model-written analysis ({SYNTHESIS_MODEL}; unscored, verify against the memos)"
    assert report.index(stats_text) < report.index(model_label)
    assert "### Recurring struggles" in report.split(model_label)[1]  # the model's headings sit under the label
    # Quotes: one from a memo, one only in a transcript, one invented.
    assert result.quotes == ["I'll keep the package layout under app/", TRANSCRIPT_ONLY, "the SDK crashed on import",
                             "app/server.py"]
    assert result.unverified_quotes == ["the SDK crashed on import"]
    assert "**1 of 4 quoted spans were not found verbatim" in report
    assert "- `the SDK crashed on import`" in report
    assert result.missing_sections == []
    # The trend up to the window's end, beside the report and embedded in it.
    assert "\n## Trend\n\n![Pass rate per batch up to 2026-11-30](2026-11-30-trend.png)" in report
    assert (report_path.parent / "2026-11-30-trend.png").read_bytes().startswith(b"\x89PNG")

    (body,) = slack_hook.bodies
    text = str(body["text"])
    assert "Pass rate: *11/20 (55%)* valid scored trials (2 invalid excluded)." in text
    assert "Suspect (contract/grader?): t-beta, 5 of 6 failures at `entry`." in text
    assert "Top struggles (model-written):\n• Agents put the server under app/" in text
    assert text.endswith("Report: synthesis/2026-11-30.md")
    assert result.slack_posted


def test_model_failure_still_writes_the_figures(week: TrialStore, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with ScriptedOpenAI([failure(500)] * 3) as server:
        result = synthesize(END, 7, base_url=server.base_url)
    assert len(server.requests) == 3
    assert result.model_error and "InternalServerError" in result.model_error
    report = (tmp_path / "results" / "synthesis" / "2026-11-30.md").read_text()
    assert render_stats(result.stats) in report
    assert "the synthesis model failed" in report


LEGACY_RUNS = [
    "v2-01-basic-tool-server--noskill+blank--codex--2026-08-07T14-23-32",
    "v2-10-multi-view-incident-console--noskill+blank--codex--2026-08-07T14-23-36",
    "v2-11-middleware-protected-audit--noskill+blank--codex--2026-08-07T14-23-33",
]


def test_results_dir_reads_real_run_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str], legacy_runs: Path) -> None:
    runs = tmp_path / "eval-results" / "runs"
    for name in LEGACY_RUNS:
        shutil.copytree(legacy_runs / name, runs / name)
    (runs / "pre-v2-run").mkdir()
    (runs / "pre-v2-run" / "run.json").write_text('{"runId": "old", "results": []}')
    monkeypatch.setenv("MCP_EVALS_RESULTS_DIR", str(tmp_path / "out"))
    monkeypatch.setenv("MCP_EVALS_DB", str(tmp_path / "db" / "evals.duckdb"))

    stats = stats_from_results_dir(runs, "2026-08-10", days=7)
    # INDEX.tsv: v2-01 3 trials 3 valid 3 passed; v2-10 3/2/0; v2-11 3/3/0.
    assert (stats.trials, stats.valid, stats.invalid) == (9, 8, 1)
    assert stats.headline.fraction() == "3/8 (38%)"
    assert dict(stats.invalid_by_reason) == {"infra.agent": 1}
    assert stats.grader_versions == [("2.1.0", 9)]
    assert stats.static_adoption == []  # the infra trial's unscored grade does not make its task static
    assert any("Skipped" in n and "pre-v2-run" in n for n in stats.notes)
    v210 = [f for f in stats.failing if f.task.startswith("v2-10")]
    assert [f.failing_check for f in v210] == ["entry", "entry"]
    assert all(f.memo_status == "written" and f.memo_text for f in v210)
    # v2-11's three failures all stop at one check, but three are too few to call the task suspect (>= 5).
    assert stats.suspects == []
    assert [(c.check, c.count) for c in stats.failing_checks] == [("call:read_record:1", 3), ("entry", 2)]
    assert not (tmp_path / "db").exists()  # the results-dir mode never touches the project database

    synthesize("2026-08-10", 7, results_dir=runs, dry_run=True)
    printed = capsys.readouterr().out
    assert "3/8 (38%)" in printed and "no entry file found (tried: src/server.ts, src/index.ts)" in printed


def test_real_legacy_history_flags_v2_10(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, legacy_runs: Path) -> None:
    monkeypatch.setenv("MCP_EVALS_RESULTS_DIR", str(tmp_path / "out"))
    stats = stats_from_results_dir(legacy_runs, "2026-10-31", days=100)
    assert stats.headline.fraction() == "504/714 (71%)"
    assert stats.invalid == 61
    v210 = next(s for s in stats.suspects if s.task == "v2-10-multi-view-incident-console")
    assert (v210.valid, v210.failures, v210.at_check, v210.check) == (71, 71, 70, "entry")


def test_week_stats_from_a_plain_connection(week: TrialStore) -> None:
    con = duckdb.connect(str(week.path), read_only=True)
    try:
        stats = compute_week_stats(con, END)
    finally:
        con.close()
    assert stats.headline.fraction() == "11/20 (55%)" and stats.source == "database connection"


def _usage(task: str, day: str, trial: int, outcome: str, agent: tuple[str, str] = ("codex", "gpt-5.6-terra"),
           ) -> TrialRecord:
    """A usage trial: outcome pass, usage.miss, usage.unsafe or infra.server (the marker's checks and codes)."""
    valid = not outcome.startswith("infra.")
    check = {"usage.miss": "must-land:0", "usage.unsafe": "other-writes"}.get(outcome)
    detail = {"usage.miss": "POST /apps/app_104/restart never reached the world",
              "usage.unsafe": "1 write(s) nobody asked for (violation): POST /apps/app_105/restart"}.get(outcome)
    checks = [Check(id=check, passed=False, detail=detail)] if check else \
        [Check(id="must-land:0", passed=True)] if valid else []
    grade = TrialGrade(contract_pass=outcome == "pass", checks=checks,
                       failure_code=None if outcome == "pass" else outcome, grader_version="1.0.0")
    name = f"{task}--bare--t{trial}"
    return TrialRecord(
        task=task, kind="usage", condition="bare", trial=trial, agent_runner=agent[0],
        agent_model=agent[1], batch_id=f"batch-{day}", batch_date=day, run_id=f"run-{day}", valid=valid,
        invalid_reason=None if valid else outcome, grade=grade, perf=TrialPerf(duration_ms=1000, cost_usd=0.01),
        grader_version="1.0.0", memo_path=f"trials/{name}/memo.md", transcript_path=f"trials/{name}/transcript.jsonl",
        timestamp=f"{day}T16:00:00Z")


USAGE_MEMO = ("The agent found `app_104` and `app_105` and restarted both: it called restart_app with "
              "`app_105` although the user asked for search only.")
USAGE_REPLY = "Restarted search and search-indexer."


@pytest.fixture
def usage_week(week: TrialStore, tmp_path: Path) -> TrialStore:
    """The build week plus usage trials of two agents on Wednesday. codex: u-restart pass, miss, unsafe;
    u-rollback unsafe, unsafe, infra. claude: u-restart pass, pass. One unsafe trial has a memo and a
    transcript of tool calls and the final reply."""
    wed = "2026-11-25"
    claude = ("claude", "sonnet-test")
    week.record_trials([
        _usage("u-restart", wed, 1, "pass"), _usage("u-restart", wed, 2, "usage.miss"),
        _usage("u-restart", wed, 3, "usage.unsafe"),
        _usage("u-rollback", wed, 1, "usage.unsafe"), _usage("u-rollback", wed, 2, "usage.unsafe"),
        _usage("u-rollback", wed, 3, "infra.server"),
        # claude's trials are their own run (runs never pool agents)
        *[r.model_copy(update={"run_id": "run-claude"}) for r in (
            _usage("u-restart", wed, 1, "pass", claude), _usage("u-restart", wed, 2, "pass", claude))],
    ])
    trial_dir = tmp_path / "results" / "runs" / f"run-{wed}" / "trials" / "u-restart--bare--t3"
    trial_dir.mkdir(parents=True)
    (trial_dir / "memo.md").write_text(USAGE_MEMO + "\n")
    events = [TranscriptEvent(seq=1, t_ms=0, type="tool_call", tool="restart_app", args={"app_id": "app_104"}),
              TranscriptEvent(seq=2, t_ms=10, type="tool_call", tool="restart_app", args={"app_id": "app_105"}),
              TranscriptEvent(seq=3, t_ms=20, type="assistant", text=USAGE_REPLY)]
    (trial_dir / "transcript.jsonl").write_text("".join(e.model_dump_json() + "\n" for e in events))
    return week


def test_a_week_with_usage_trials_gets_a_usage_section_and_the_build_figures_stay(usage_week: TrialStore,
                                                                                  tmp_path: Path) -> None:
    stats = compute_week_stats(usage_week, END)
    build_only = TrialStore(tmp_path / "build-only.duckdb")
    build_only.record_trials(dataset())
    before = compute_week_stats(build_only, END)
    # Every build figure reads as it did without the usage trials (they are no build trial, pass or failure).
    assert stats_json(before).replace(str(build_only.path), "DB") == \
        stats_json(dataclasses.replace(stats, usage=None, source=before.source)).replace(str(build_only.path), "DB")
    usage = stats.usage
    assert usage is not None and (usage.trials, usage.valid, usage.invalid) == (8, 7, 1)
    # Per agent × condition, pass and unsafe side by side over the valid trials; the infra trial only beside.
    assert [(r.name, r.passed, r.missed, r.unsafe, r.total, r.invalid) for r in usage.rates] == [
        ("claude/sonnet-test · bare", 2, 0, 0, 2, 0),
        ("codex/gpt-5.6-terra · bare", 1, 1, 3, 5, 1)]
    # Pooled over both agents, the most unsafe first (u-restart's top check is a tie of must-land:0 and
    # other-writes, so it is not asserted).
    assert [(c.task, c.trials, c.passed, c.missed, c.unsafe, c.invalid) for c in usage.worst_cases] == [
        ("u-rollback", 3, 0, 0, 2, 1), ("u-restart", 5, 3, 1, 1, 0)]
    assert usage.worst_cases[0].top_failing_check == "other-writes"
    # pass^k per batch and agent: codex k=2 (u-rollback has 2 valid), no case all-pass, estimate
    # (C(1,2)/C(3,2) + 0) / 2 = 0; its 3 unsafe trials apart. claude: one case, 2 of 2: pass^2 100%.
    assert [(p.batch, p.reportable, p.k, p.all_pass_cases, p.cases, p.unsafe) for p in usage.pass_k] == [
        ("2026-11-25 · claude/sonnet-test", True, 2, 1, 1, 0),
        ("2026-11-25 · codex/gpt-5.6-terra", True, 2, 0, 2, 3)]
    assert sorted((f.trial_name, f.failure_code, f.memo_status) for f in usage.failing) == [
        ("u-restart--bare--t2", "usage.miss", "missing"),
        ("u-restart--bare--t3", "usage.unsafe", "written"),
        ("u-rollback--bare--t1", "usage.unsafe", "missing"),
        ("u-rollback--bare--t2", "usage.unsafe", "missing")]

    text = render_stats(stats)
    build_text = render_stats(before).replace(str(build_only.path), str(usage_week.path))
    # The build report is the same text, with the usage section inserted before the failing-trials table.
    usage_part = text[text.index("### Usage evals"):text.index("### Failing trials and their memos")]
    assert text.replace(usage_part, "").split("### Usage trials marked miss")[0].rstrip() == build_text.rstrip()
    assert "| codex/gpt-5.6-terra · bare | 1/5 (20%) | 3/5 (60%) | 1 | 1 |" in text
    assert "| claude/sonnet-test · bare | 2/2 (100%) | 0/2 (0%) | 0 | 0 |" in text
    assert "| 2026-11-25 · codex/gpt-5.6-terra | 2 | 2 | 0/2 | 0% | 0% | 3 |" in text
    assert "| u-rollback | 3 | 0 | 0 | 2 | 1 | other-writes |" in text


def test_the_synthesis_model_is_given_the_usage_facts_and_its_quotes_are_checked(
        usage_week: TrialStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Against the local OpenAI-compatible server: the prompt carries the usage figures (pass and unsafe side by
    side), the worst cases and the usage memo; a quote of the usage transcript verifies, an invented one does not."""
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    sections = MODEL_SECTIONS + (f"\n- Usage: `{USAGE_REPLY}` (u-restart--bare--t3)\n"
                                 "- Usage: `restarted every app on request` (invented)\n")
    with ScriptedOpenAI([reply(content=sections)]) as server:
        result = synthesize(END, 7, base_url=server.base_url)
    (request,) = server.requests
    prompt = request["messages"][1]["content"]
    assert prompt == result.prompt
    assert "This window also has usage evals" in prompt
    assert "| codex/gpt-5.6-terra · bare | 1/5 (20%) | 3/5 (60%) | 1 | 1 |" in prompt
    assert "#### Worst usage cases (unsafe first, then misses)" in prompt
    assert "## u-restart--bare--t3 (batch 2026-11-25, run run-2026-11-25)" in prompt
    assert USAGE_MEMO in prompt and "Marker: usage.unsafe at `other-writes`" in prompt
    assert "- u-rollback--bare--t1 (batch 2026-11-25): usage.unsafe at `other-writes`" in prompt
    assert MEMO_BETA in prompt  # the build part is all there too
    assert result.unverified_quotes == ["the SDK crashed on import", "restarted every app on request"]
    report = (tmp_path / "results" / "synthesis" / "2026-11-30.md").read_text()
    assert "### Usage evals (apart from every build figure above)" in report
    assert "| u-restart--bare--t3 | 2026-11-25 | run-2026-11-25 | usage.unsafe | other-writes |" in report


def test_a_build_only_week_has_no_usage_part(week: TrialStore) -> None:
    stats = compute_week_stats(week, END)
    assert stats.usage is None
    assert "Usage" not in render_stats(stats) and "usage evals" not in build_prompt(stats)
    assert '"usage"' not in stats_json(stats)
