"""Findings that persist, over three synthesis weeks against a real local OpenAI-compatible server and the real
CLI: code decides every status from the trials (new, recurring, apparently-resolved, not-observed); the scripted
model's proposals that name unknown ids, unobserved signatures, invented quotes or statuses change nothing."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest
from click.testing import CliRunner, Result

from mcp_evals_pipeline.cli import main
from mcp_evals_pipeline.defs.reports.assets import findings
from mcp_evals_pipeline.defs.resources import EvalStore
from mcp_evals_pipeline.findings.status import RESOLVED_AFTER_BATCHES
from mcp_evals_pipeline.store import TrialStore
from mcp_evals_pipeline.synthesis import SynthesisError, synthesize
from mcp_evals_pipeline.synthesis.report import slack_summary
from tests.support.openai_server import ScriptedOpenAI, reply
from tests.test_synthesis import ADD_DETAIL, ENTRY_DETAIL, _grade, _record, _usage

# Sundays, as the weekly partitions end (the Dagster `findings` asset reads week 3's partition, 2026-11-23): each
# window is the 7 days ending there.
W1, W2, W3 = "2026-11-15", "2026-11-22", "2026-11-29"
X = {"task": "t-x", "failure_code": "contract.entry", "failing_check": "entry"}
Y = {"task": "t-y", "failure_code": "contract.calls", "failing_check": "call:add:1"}
Z = {"task": "t-z", "failure_code": "contract.tools", "failing_check": "tools"}
USAGE = {"case": "u-restart", "mark": "other-writes"}
MEMO_X = "The agent wrote `app/server.py` and said `I'll keep the package layout under app/`."
QUOTE_X = "I'll keep the package layout under app/"


def trials() -> list:
    """X (t-x at `entry`) fails in weeks 1 and 2 and its task passes in two batches of week 3; Y (t-y at
    `call:add:1`) fails in weeks 1 and 2 and its task does not run in week 3; t-z fails only in week 3."""
    P = _grade("pass")
    fx, fy, fz = (_grade("fail", "entry", ENTRY_DETAIL), _grade("fail", "call:add:1", ADD_DETAIL),
                  _grade("fail", "tools", "missing tool list_items"))
    return [
        _record("t-x", "2026-11-11", 1, fx), _record("t-x", "2026-11-11", 2, fx), _record("t-x", "2026-11-11", 3, P),
        _record("t-y", "2026-11-11", 1, fy), _record("t-y", "2026-11-11", 2, P),
        _usage("u-restart", "2026-11-11", 1, "usage.unsafe"),
        _record("t-x", "2026-11-18", 1, fx), _record("t-x", "2026-11-18", 2, P), _record("t-y", "2026-11-20", 1, fy),
        _record("t-x", "2026-11-25", 1, P), _record("t-x", "2026-11-27", 1, P), _record("t-z", "2026-11-25", 1, fz),
    ]


def answer(*proposals: dict) -> str:
    """The model's four sections: prose (not checked here) and the findings block."""
    return ("## Recurring struggles\n- Entry files.\n\n## Quoted evidence\n- none\n\n"
            "## Proposed issues for human review\n1. none\n\n## Findings\n```json\n"
            + json.dumps({"proposals": list(proposals)}, indent=1) + "\n```\n")


WEEK1 = answer(
    # A status and an id of its own choosing are ignored: code creates F-0001 and calls it new.
    {"struggle": "entry file", "finding": "new", "status": "recurring", "id": "F-0100", "title":
     "Agents miss the entry file the contract names", "category": "docs", "signature": [X],
     "quotes": [{"text": QUOTE_X, "trial": "t-x--noskill+blank--t1"},
                {"text": "the SDK crashed on import", "trial": "t-x--noskill+blank--t1"}]},
    {"struggle": "wrong sum", "finding": "new", "title": "add returns a wrong sum", "category": "SDK",
     "signature": [Y, {"task": "t-q", "failure_code": "contract.entry", "failing_check": "entry"}]},
    {"struggle": "unasked restarts", "finding": "new", "title": "Restarts apps nobody asked for",
     "category": "server", "signature": [USAGE]},
    {"struggle": "made up", "finding": "F-0042", "signature": [X]},
)
WEEK2 = answer(
    {"struggle": "entry file again", "finding": "F-0001", "status": "apparently-resolved", "signature": [X]},
    {"struggle": "wrong sum", "finding": "new", "title": "a duplicate", "category": "SDK", "signature": [Y]},
    {"struggle": "not this week", "finding": "F-0002",
     "signature": [{"task": "t-never", "failure_code": "contract.entry", "failing_check": "entry"}]},
)
WEEK3 = answer(
    {"struggle": "entry file (claimed)", "finding": "F-0001", "status": "recurring", "signature": [X]},
    {"struggle": "tool list", "finding": "new", "title": "A tool is missing from the list", "category": "SDK",
     "signature": [Z]},
)


def _statuses(results: Path) -> dict[str, list[str]]:
    return {p.stem: [h["status"] for h in json.loads(p.read_text())["history"]]
            for p in sorted((results / "findings").glob("*.json"))}


def _cli(*args: str, env: dict[str, str]) -> Result:
    """The real CLI in process (as tests/test_cli_guides.py: a subprocess would pay its imports once per call)."""
    return CliRunner().invoke(main, list(args), env=env, terminal_width=400)


def test_three_weeks_of_findings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    results = tmp_path / "results"
    monkeypatch.setenv("MCP_EVALS_RESULTS_DIR", str(results))
    monkeypatch.setenv("MCP_EVALS_DB", str(tmp_path / "db" / "evals.duckdb"))
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    for name in ("SLACK_WEBHOOK_URL", "OPENAI_BASE_URL", "MCP_EVALS_REPORT_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    store = TrialStore()
    store.record_trials(trials())
    memo = results / "runs" / "run-2026-11-11" / "trials" / "t-x--noskill+blank--t1" / "memo.md"
    memo.parent.mkdir(parents=True)
    memo.write_text(MEMO_X + "\n")

    with ScriptedOpenAI([reply(content=c) for c in (WEEK1, WEEK2, WEEK3, WEEK3)]) as server:
        week1 = synthesize(W1, 7, base_url=server.base_url)
        assert _statuses(results) == {"F-0001": ["new"], "F-0002": ["new"], "F-0003": ["new"]}
        week2 = synthesize(W2, 7, base_url=server.base_url)
        week3 = synthesize(W3, 7, base_url=server.base_url)
        files = {p.name: p.read_text() for p in (results / "findings").glob("*.json")}
        again = synthesize(W3, 7, base_url=server.base_url)  # a re-run of a week replaces that week's verdicts
    assert {p.name: p.read_text() for p in (results / "findings").glob("*.json")} == files

    # Statuses by code: X new, recurring, apparently resolved (t-x ran in 2 batches of week 3 without it); Y not
    # observed in week 3 (t-y did not run); the usage finding not observed once u-restart stopped running.
    assert RESOLVED_AFTER_BATCHES == 2
    assert _statuses(results) == {"F-0001": ["new", "recurring", "apparently-resolved"],
                                  "F-0002": ["new", "recurring", "not-observed"],
                                  "F-0003": ["new", "not-observed", "not-observed"],
                                  "F-0004": ["new"]}
    x = json.loads((results / "findings" / "F-0001.json").read_text())
    assert (x["title"], x["category"], x["first_seen"], x["last_seen"], x["status"]) == (
        "Agents miss the entry file the contract names", "docs", W1, W2, "apparently-resolved")
    assert x["signature"] == {"build": [X], "usage": []}
    assert x["evidence"] == [{"text": QUOTE_X, "trial": "t-x--noskill+blank--t1", "week": W1}]  # verified only
    assert [h["matching_trials"] for h in x["history"]] == [
        ["2026-11-11 t-x--noskill+blank--t1", "2026-11-11 t-x--noskill+blank--t2"],
        ["2026-11-18 t-x--noskill+blank--t1"], []]
    y = json.loads((results / "findings" / "F-0002.json").read_text())
    assert y["signature"] == {"build": [Y], "usage": []}  # t-q (not failing that week) was not taken in
    usage = json.loads((results / "findings" / "F-0003.json").read_text())
    assert (usage["category"], usage["signature"]) == ("server", {"build": [], "usage": [USAGE]})

    # What code dropped from the model's proposals, said in the report.
    notes1 = "\n".join(week1.findings.notes)
    assert "no finding F-0042 exists" in notes1
    assert "signature build task=t-q failure_code=contract.entry failing_check=entry dropped" in notes1
    assert "quote `the SDK crashed on import` dropped: not found verbatim" in notes1
    notes2 = "\n".join(week2.findings.notes)
    assert "its signature is already F-0002's; matched to it, not created" in notes2
    assert "Proposal 3 (F-0002: not this week) dropped: none of the signature" in notes2
    assert "Proposal 1 (F-0001: entry file (claimed)) dropped" in "\n".join(week3.findings.notes)
    # The model was shown the open findings and the week's observed items.
    prompt2 = server.requests[1]["messages"][1]["content"]
    assert ("- F-0001: Agents miss the entry file the contract names [docs] signature: build task=t-x "
            "failure_code=contract.entry failing_check=entry") in prompt2
    assert "- build task=t-x failure_code=contract.entry failing_check=entry (1 trial(s))" in prompt2

    # The report leads with what changed; the findings block is not prose, nor counted as quotes.
    report = week3.report_path.read_text()
    lead = report.index("## What changed: findings")
    assert lead < report.index("## Computed figures")
    changed = report[lead:report.index("## Computed figures")]
    assert changed.index("**New**\n\n- F-0004 [SDK] A tool is missing from the list") < \
        changed.index("**Apparently resolved**\n\n- F-0001 [docs]") < \
        changed.index("**Not observed (its tasks did not run)**\n\n- F-0002 [SDK] add returns a wrong sum")
    assert "```json" not in report and week3.quotes == [] and again.findings.created == []
    slack = slack_summary(week3, "synthesis/2026-11-29.md").splitlines()
    assert slack[1:3] == ["New findings: F-0004 A tool is missing from the list",
                          "Apparently resolved: F-0001 Agents miss the entry file the contract names"]

    # The DuckDB index: both tables rebuilt from the files.
    history = store.query("SELECT id, CAST(week AS VARCHAR) AS week, status FROM finding_history "
                          "WHERE id = 'F-0001' ORDER BY week")
    assert [(h["week"], h["status"]) for h in history] == [
        (W1, "new"), (W2, "recurring"), (W3, "apparently-resolved")]

    # The CLI: list by status, close (kept), a missing id (exit 2, did you mean, nothing written).
    env = {"MCP_EVALS_RESULTS_DIR": str(results), "MCP_EVALS_DB": str(store.path)}
    listed = _cli("findings", "--status", "apparently-resolved", "--json", env=env)
    assert listed.exit_code == 0, listed.output
    assert [f["id"] for f in json.loads(listed.stdout)] == ["F-0001"]
    before = {p.name: p.read_text() for p in (results / "findings").glob("*.json")}
    missing = _cli("findings", "close", "F-0011", "--reason", "fixed", env=env)
    assert missing.exit_code == 2 and "no finding 'F-0011'" in missing.stderr
    assert "did you mean F-0001?" in missing.stderr
    assert {p.name: p.read_text() for p in (results / "findings").glob("*.json")} == before
    closed = _cli("findings", "close", "F-0001", "--reason", "docs now name the entry file", "--by", "alice",
                  env=env)
    assert closed.exit_code == 0, closed.output
    (close,) = json.loads((results / "findings" / "F-0001.json").read_text())["closes"]
    assert (close["by"], close["reason"]) == ("alice", "docs now name the entry file")
    assert store.query("SELECT closed FROM findings WHERE id = 'F-0001'") == [{"closed": True}]
    materialized = _materialize_findings(store)
    assert materialized.success
    meta = {k: v.value for k, v in materialized.asset_materializations_for_node("findings")[0].metadata.items()}
    assert (meta["findings"], meta["new"], meta["apparently-resolved"], meta["not-observed"]) == (4, 1, 1, 2)

    # A malformed findings file: a clear error naming file and field, exit 2, nothing written.
    bad = results / "findings" / "F-0005.json"
    bad.write_text(json.dumps({**json.loads(files["F-0004.json"]), "id": "F-0005", "category": "vibes"}))
    before = {p.name: p.read_text() for p in (results / "findings").glob("*.json")}
    for args in (("findings",), ("findings", "close", "F-0001", "--reason", "again")):
        broken = _cli(*args, env=env)
        assert broken.exit_code == 2 and "F-0005.json: field category" in broken.stderr, broken.stderr
    with pytest.raises(SynthesisError, match=r"F-0005\.json: field category"):
        synthesize("2026-12-21", 7, base_url="http://127.0.0.1:9/v1")
    assert {p.name: p.read_text() for p in (results / "findings").glob("*.json")} == before
    assert not (results / "synthesis" / "2026-12-21.md").exists()
    failed = _materialize_findings(store)
    assert not failed.success
    assert "F-0005.json: field category" in str(failed.get_step_failure_events()[0].event_specific_data.error)


def _materialize_findings(store: TrialStore) -> dg.ExecuteInProcessResult:
    """The Dagster `findings` asset of week 3 (partition 2026-11-23: 11-23 to 11-29), its upstream not run."""
    with dg.instance_for_test() as instance:
        return dg.materialize([findings], partition_key="2026-11-23", instance=instance, raise_on_error=False,
                              resources={"eval_store": EvalStore(database=str(store.path))})


def test_clean_batches_count_across_weeks_and_a_return_is_recurring() -> None:
    """status.decide alone (no model, no store): one clean batch is quiet, the second (the next week) apparently
    resolved, and the signature's return recurring again; a week its task did not run counts for nothing."""
    from mcp_evals_pipeline.findings.contract import BuildSignature, Finding, Signature
    from mcp_evals_pipeline.findings.signature import WeekObservation
    from mcp_evals_pipeline.findings.status import decide, with_week
    from mcp_evals_pipeline.synthesis.figures import FailingTrial

    item = BuildSignature(**X)
    def failing(batch: str) -> FailingTrial:
        return FailingTrial("t-x--noskill+blank--t1", "t-x", "noskill+blank", 1, "r", batch, "contract.entry",
                            "entry", None, None, "missing", None, None)

    finding = Finding(id="F-0001", title="x", category="docs", signature=Signature(build=[item]),
                      first_seen="2026-11-08", last_seen="2026-11-08", status="new")
    weeks = [("2026-11-08", {item: [failing("2026-11-06")]}, {"t-x": {"2026-11-04", "2026-11-06"}}),
             ("2026-11-15", {}, {}),  # t-x did not run
             ("2026-11-22", {}, {"t-x": {"2026-11-18"}}),
             ("2026-11-29", {}, {"t-x": {"2026-11-25"}}),
             ("2026-12-06", {item: [failing("2026-12-02")]}, {"t-x": {"2026-12-02", "2026-12-04"}})]
    verdicts = []
    for week, seen, ran in weeks:
        finding = with_week(finding, decide(finding, WeekObservation(week=week, seen=seen, ran=ran)))
        verdicts.append((finding.history[-1].status, finding.history[-1].clean_batches))
    # Seen on Friday (no clean batch after it); one clean batch is quiet, the next week's second resolves it; the
    # return counts its own week's later batch only.
    assert verdicts == [("new", 0), ("not-observed", 0), ("quiet", 1), ("apparently-resolved", 1),
                        ("recurring", 1)]
    assert (finding.status, str(finding.last_seen)) == ("recurring", "2026-12-06")
