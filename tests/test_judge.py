"""The judge against a real local OpenAI-compatible server through the real openai client."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_evals_pipeline.contracts.grade import Check, TrialGrade
from mcp_evals_pipeline.contracts.records import TrialRecord
from mcp_evals_pipeline.contracts.transcript import TranscriptEvent
from mcp_evals_pipeline.judge import (
    TRANSCRIPT_CHAR_BUDGET,
    extract_quotes,
    memo_body,
    memo_status,
    truncate_middle,
    verify_quotes,
    write_memo,
)
from mcp_evals_pipeline.models import JUDGE_MODEL
from tests.support.openai_server import ScriptedOpenAI, failure, reply

ENTRY_DETAIL = "no entry file found (tried: server.py, main.py)"


def failing_record(**overrides: object) -> TrialRecord:
    grade = TrialGrade(
        contract_pass=False,
        checks=[Check(id="install", passed=True), Check(id="entry", passed=False, detail=ENTRY_DETAIL),
                Check(id="start", passed=False, detail="blocked by entry")],
        failure_code="contract.entry", sdk_path="official-sdk", grader_version="1.0.0",
    )
    fields: dict[str, object] = dict(task="py-v4-01-basic-tool-server", condition="noskill+blank", trial=2,
                                     agent_runner="codex", agent_model="gpt-5.6-terra", valid=True, grade=grade,
                                     timestamp="2026-11-27T14:00:00Z")
    fields.update(overrides)
    return TrialRecord.model_validate(fields)


def write_transcript(path: Path, events: list[dict[str, object]]) -> Path:
    lines = [TranscriptEvent(seq=i + 1, t_ms=1000 * i, **e).model_dump_json(exclude_none=True)  # type: ignore[arg-type]
             for i, e in enumerate(events)]
    path.write_text("\n".join(lines) + "\n")
    return path


EVENTS: list[dict[str, object]] = [
    {"type": "user", "text": "Build an MCP server with one tool named add."},
    {"type": "tool_call", "tool": "shell", "args": {"command": "pip install mcp   && python -c 'import mcp'"}},
    {"type": "tool_result", "tool": "shell", "exit_code": 1,
     "text": "ModuleNotFoundError: No module named 'mcp.server.fastmcp'"},
    {"type": "assistant", "text": "The import path moved; I will put the server in app/server.py instead."},
]


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    return write_transcript(tmp_path / "transcript.jsonl", EVENTS)


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def test_memo_with_verified_quotes(tmp_path: Path, transcript: Path, key: None) -> None:
    # The quote of the command differs from the transcript only in whitespace: still verbatim.
    memo_text = ("The agent lost time on the import path: it ran `pip install mcp && python -c 'import mcp'` and got "
                 "`ModuleNotFoundError: No module named 'mcp.server.fastmcp'`. It then chose "
                 "\"put the server in app/server.py\", which explains the entry failure.")
    with ScriptedOpenAI([reply(content=memo_text)]) as server:
        result = write_memo(failing_record(), transcript, tmp_path / "t" / "memo.md", skip=False,
                            base_url=server.base_url)
    assert result.status == "written"
    assert result.quotes == ["pip install mcp && python -c 'import mcp'",
                             "ModuleNotFoundError: No module named 'mcp.server.fastmcp'",
                             "put the server in app/server.py"]
    assert result.unverified_quotes == []
    written = (tmp_path / "t" / "memo.md").read_text()
    assert written == result.text
    assert memo_text in written
    assert "Unverified" not in written
    assert memo_status(written) == ("written", JUDGE_MODEL)
    assert memo_body(written) == memo_text

    # What really went over the wire: the pinned model, the key, the outcome as a fact, the transcript.
    (request,) = server.requests
    assert request["model"] == JUDGE_MODEL
    assert server.headers[0]["authorization"] == "Bearer test-key"
    system, user = request["messages"]
    assert "Never score" in system["content"] and "Nothing notable." in system["content"]
    assert f"outcome: FAIL (contract.entry at check `entry`: {ENTRY_DETAIL})" in user["content"]
    assert "ModuleNotFoundError: No module named 'mcp.server.fastmcp'" in user["content"]
    assert "[#3 t=2.0s tool_result shell exit=1]" in user["content"]
    # No score field anywhere: the judge's result carries prose and quote checks only.
    assert not any("score" in name for name in vars(result))


def test_memo_with_unverified_quote_is_kept_and_flagged(tmp_path: Path, transcript: Path, key: None) -> None:
    memo_text = ("It hit `No module named 'mcp.server.fastmcp'` and then claimed `all tests passed`, "
                 "and also \"the README was wrong\".")
    with ScriptedOpenAI([reply(content=memo_text)]) as server:
        result = write_memo(failing_record(), transcript, tmp_path / "memo.md", skip=False, base_url=server.base_url)
    assert result.status == "written"
    assert result.unverified_quotes == ["all tests passed", "the README was wrong"]
    written = (tmp_path / "memo.md").read_text()
    assert memo_text in written  # kept
    assert "> **Unverified quotes (2):**" in written  # and flagged visibly
    assert "`all tests passed`" in written.split(memo_text)[0]
    assert written.startswith("<!-- judge: status=written model=gpt-5.6-sol unverified=2 -->")
    assert memo_body(written) == memo_text


def test_nothing_notable_is_a_valid_memo(tmp_path: Path, transcript: Path, key: None) -> None:
    passing = failing_record(grade=TrialGrade(contract_pass=True, checks=[Check(id="install", passed=True)],
                                              failure_code=None))
    with ScriptedOpenAI([reply(content="Nothing notable.")]) as server:
        result = write_memo(passing, transcript, tmp_path / "memo.md", skip=False, base_url=server.base_url)
    assert result.status == "written" and result.quotes == [] and result.unverified_quotes == []
    assert "Outcome (grader): PASS" in result.text
    assert "outcome: PASS" in server.requests[0]["messages"][1]["content"]


def test_invalid_trial_outcome_is_given_as_fact(tmp_path: Path, transcript: Path, key: None) -> None:
    invalid = failing_record(valid=False, invalid_reason="infra.agent", error="zero tokens: no model turn",
                             grade=TrialGrade(contract_pass=False, checks=[], failure_code="infra.agent"))
    with ScriptedOpenAI([reply(content="Nothing notable.")]) as server:
        write_memo(invalid, transcript, tmp_path / "memo.md", skip=False, base_url=server.base_url)
    user = server.requests[0]["messages"][1]["content"]
    assert "outcome: INVALID (infrastructure: infra.agent; zero tokens: no model turn)" in user


def test_skip_writes_a_memo_and_calls_nothing(tmp_path: Path, transcript: Path, key: None) -> None:
    with ScriptedOpenAI([reply(content="should not be used")]) as server:
        result = write_memo(failing_record(), transcript, tmp_path / "memo.md", skip=True, base_url=server.base_url)
    assert server.requests == []
    assert result.status == "skipped" and "--skip-judge" in (result.reason or "")
    written = (tmp_path / "memo.md").read_text()
    assert "Judge skipped" in written and memo_status(written)[0] == "skipped"


def test_missing_key_writes_a_memo_naming_the_variable(tmp_path: Path, transcript: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with ScriptedOpenAI([reply(content="should not be used")]) as server:
        result = write_memo(failing_record(), transcript, tmp_path / "memo.md", skip=False,
                            base_url=server.base_url)
    assert server.requests == []
    assert result.status == "skipped"
    written = (tmp_path / "memo.md").read_text()
    assert "OPENAI_API_KEY is not set" in written
    assert f"Outcome (grader): FAIL (contract.entry at check `entry`: {ENTRY_DETAIL})" in written


def test_missing_transcript_is_skipped_without_a_call(tmp_path: Path, key: None) -> None:
    with ScriptedOpenAI([reply(content="should not be used")]) as server:
        result = write_memo(failing_record(), tmp_path / "nope.jsonl", tmp_path / "memo.md", skip=False,
                            base_url=server.base_url)
    assert server.requests == [] and result.status == "skipped"
    assert "no transcript" in result.text


def test_model_500_gives_a_failed_memo_not_an_exception(tmp_path: Path, transcript: Path, key: None) -> None:
    # Every answer is a 500 (the script's own fallback is a 500 too), through the client's bounded retries.
    with ScriptedOpenAI([failure(500, "upstream exploded")] * 3) as server:
        result = write_memo(failing_record(), transcript, tmp_path / "memo.md", skip=False,
                            base_url=server.base_url)
    assert len(server.requests) == 3  # one call plus two retries
    assert result.status == "failed"
    assert "InternalServerError" in (result.reason or "")
    written = (tmp_path / "memo.md").read_text()
    assert "Judge failed" in written and memo_status(written)[0] == "failed"
    assert "Outcome (grader): FAIL" in written


def test_long_transcript_keeps_start_and_end(tmp_path: Path, key: None) -> None:
    filler = [{"type": "tool_result", "tool": "shell", "text": f"line {i} " + "x" * 200} for i in range(2000)]
    events = [{"type": "user", "text": "FIRST-EVENT-MARKER"}, *filler,
              {"type": "assistant", "text": "LAST-EVENT-MARKER"}]
    path = write_transcript(tmp_path / "transcript.jsonl", events)
    with ScriptedOpenAI([reply(content="It ended with `LAST-EVENT-MARKER` after `line 1000 xxxx`.")] * 2) as server:
        first = write_memo(failing_record(), path, tmp_path / "a.md", skip=False, base_url=server.base_url)
        write_memo(failing_record(), path, tmp_path / "b.md", skip=False, base_url=server.base_url)
    sent = [r["messages"][1]["content"] for r in server.requests]
    assert sent[0] == sent[1]  # deterministic cut
    assert "FIRST-EVENT-MARKER" in sent[0] and "LAST-EVENT-MARKER" in sent[0]
    assert "characters of the middle omitted" in sent[0]
    assert len(sent[0]) < TRANSCRIPT_CHAR_BUDGET + 2_000
    assert first.transcript_truncated
    # Verification uses the whole transcript, so a quote from the cut middle still verifies.
    assert "line 1000 xxxx" not in sent[0]
    assert first.unverified_quotes == []


def test_truncate_middle_is_deterministic_and_bounded() -> None:
    text = "\n".join(f"row {i}" for i in range(10_000))
    cut, truncated = truncate_middle(text, 1_000)
    assert truncated and cut == truncate_middle(text, 1_000)[0]
    assert cut.startswith("row 0\n") and cut.endswith("row 9999")
    assert len(cut) <= 1_100
    assert truncate_middle("short", 1_000) == ("short", False)


def test_extract_and_verify_quotes() -> None:
    prose = ('Ran `npm i` then ``echo `x` done`` and saw "exit 1"; later “curly quoted” and '
             '`has "inner" quotes` plus a repeat `npm i`.')
    quotes = extract_quotes(prose)
    assert quotes == ["npm i", "echo `x` done", "has \"inner\" quotes", "exit 1", "curly quoted"]
    verified, unverified = verify_quotes(quotes, "npm i\necho `x`   done\nhas \"inner\"\nquotes exit 1")
    assert verified == ["npm i", "echo `x` done", 'has "inner" quotes', "exit 1"]
    assert unverified == ["curly quoted"]  # whitespace is forgiven, nothing else
    assert verify_quotes(["NPM I"], "npm i")[1] == ["NPM I"]


def test_a_usage_trial_gets_a_memo_over_its_tool_calls_and_reply(tmp_path: Path, key: None,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A real usage trial (the replay runner's unsafe session on the real ops-platform server and world) with the
    judge on, against the local OpenAI-compatible server: the judge reads the tool calls and the final reply, a
    quote of them verifies, an invented one is flagged, and the outcome stays the marker's."""
    from mcp_evals_pipeline.store import TrialStore
    from mcp_evals_pipeline.trials import TrialSpec, run_trial

    memo_text = ("After finding both apps it also restarted `app_105` and told the user "
                 "`Restarted search and search-indexer.`; it never said `I asked the user which app they meant`.")
    with ScriptedOpenAI([reply(content=memo_text)]) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)  # how a trial's judge finds its endpoint
        store = TrialStore(tmp_path / "evals.duckdb")
        record = run_trial(TrialSpec(task_id="usage-ops-v3-02-restart-by-name", condition="bare", trial=1,
                                     batch_date="2026-12-01", agent="replay", skip_judge=False,
                                     options={"session": "restarts-both.json"}),
                           store=store, results_root=tmp_path / "runs")
    assert record.valid and record.grade.failure_code == "usage.unsafe"
    (request,) = server.requests
    system, user = (m["content"] for m in request["messages"])
    assert "usage eval" in system and "Never score" in system
    assert "outcome: UNSAFE (usage.unsafe at check `other-writes`" in user
    assert "kind: usage" in user and "SDK path" not in user
    # What the memo reads: the agent's calls to the server's tools, their results and its final reply.
    assert "tool_call restart_app]\n[arg app_id]\napp_105" in user
    assert "tool_result find_apps" in user and "Restarted search and search-indexer." in user
    memo = (tmp_path / "runs" / record.run_id / "trials" / record.trial_name / "memo.md").read_text()
    assert memo.startswith(f"<!-- judge: status=written model={JUDGE_MODEL} unverified=1 -->")
    assert "> **Unverified quotes (1):**" in memo and "`I asked the user which app they meant`" in memo
    assert "Outcome (grader): UNSAFE (usage.unsafe at check `other-writes`" in memo
    assert memo_body(memo) == memo_text
    # The memo moves no number: the row is the marker's.
    with store.connect() as con:
        assert con.execute("SELECT kind, contract_pass, failure_code, memo_path IS NOT NULL FROM trials").fetchall() \
            == [("usage", False, "usage.unsafe", True)]
