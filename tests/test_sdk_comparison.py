"""SDKs on one contract (dbt_like_sql/sdk_comparison.sql) on a real DuckDB store: every figure of the model, the
scorecard section and `mcp-evals compare --suite A --suite B` checked against counts taken from the trial rows
written here, with the Wilson and Newcombe intervals computed apart in Python."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from mcp_evals_pipeline.reporting import stats
from mcp_evals_pipeline.reporting.scorecard import render_report
from mcp_evals_pipeline.sql_models import materialize_models
from mcp_evals_pipeline.store import TrialStore

from .test_sql_models import NS, SK, _trial

PY, USE = "mcp-python", "mcp-use"
# task id -> (suite, slug): real ids of tasks/suites.json, so the store files each row under its suite by itself.
TASKS = {
    "v5-01-basic-tool-server": (USE, "basic-tool-server"),
    "py-v4-01-basic-tool-server": (PY, "basic-tool-server"),
    "v5-02-stateful-ticket-queue": (USE, "stateful-ticket-queue"),
    "py-v4-02-stateful-ticket-queue": (PY, "stateful-ticket-queue"),
    "v4-03-docs-lookup-server": (USE, "docs-lookup-server"),
    "py-v5-03-docs-lookup-server": (PY, "docs-lookup-server"),
    "v4-06-project-board-composition": (USE, "project-board-composition"),
}
OLD_BASIC = ("v4-01-basic-tool-server", "a9ec3206b062")  # retired in mcp-use: an older contract of basic-tool-server


def _records() -> list:
    """B1 (2026-09-01): mcp-use's retired v4-01 fails three times (an old contract: must not pool with v5-01).
    B2 (2026-09-03), codex/gpt-test:
        basic-tool-server      mcp-use v5-01  NS: P P F   SK: P P     mcp-python py-v4-01  NS: P F F I   SK: F F
        stateful-ticket-queue  mcp-use v5-02  NS: P P P               mcp-python py-v4-02  NS: F F
        docs-lookup-server     mcp-use v4-03  NS: P                   mcp-python py-v5-03  NS: I (no valid trial)
        project-board          mcp-use only   NS: P
    claude/sonnet-test: basic-tool-server NS mcp-use P, mcp-python P P (its own group, never pooled with codex).
    replay (no model): basic-tool-server NS P on both (marked: recorded sessions)."""
    b1, b2 = ("R1", "B1", "2026-09-01", "2.2.0"), ("R2", "B2", "2026-09-03", "2.2.0")
    rows = [_trial(*b1, OLD_BASIC[0], NS, i, "fail", check="tools").model_copy(update={"prompt_hash": OLD_BASIC[1]})
            for i in (1, 2, 3)]
    plan = {
        ("v5-01-basic-tool-server", NS): ["pass", "pass", "fail"],
        ("v5-01-basic-tool-server", SK): ["pass", "pass"],
        ("py-v4-01-basic-tool-server", NS): ["pass", "fail", "fail", "infra.agent"],
        ("py-v4-01-basic-tool-server", SK): ["fail", "fail"],
        ("v5-02-stateful-ticket-queue", NS): ["pass", "pass", "pass"],
        ("py-v4-02-stateful-ticket-queue", NS): ["fail", "fail"],
        ("v4-03-docs-lookup-server", NS): ["pass"],
        ("py-v5-03-docs-lookup-server", NS): ["infra.agent"],
        ("v4-06-project-board-composition", NS): ["pass"],
    }
    for (task, condition), outcomes in plan.items():
        rows += [_trial(*b2, task, condition, i, o, check="tools") for i, o in enumerate(outcomes, 1)]
    claude = ("R3", "B2", "2026-09-03", "2.2.0")
    rows += [_trial(*claude, "v5-01-basic-tool-server", NS, 1, "pass", agent="claude", model="sonnet-test")]
    rows += [_trial(*claude, "py-v4-01-basic-tool-server", NS, i, "pass", agent="claude", model="sonnet-test")
             for i in (1, 2)]
    replay = ("R4", "B2", "2026-09-03", "2.2.0")
    rows += [_trial(*replay, t, NS, 1, "pass", agent="replay", model=None)
             for t in ("v5-01-basic-tool-server", "py-v4-01-basic-tool-server")]
    return rows


def _counts(records: list) -> dict[tuple, Counter]:
    """(suite, slug, agent, model, condition) -> passed / valid / trials / invalid, from the rows as written (the
    retired contract left out, as the model must)."""
    out: dict[tuple, Counter] = {}
    for r in records:
        if r.task not in TASKS:
            continue
        suite, slug = TASKS[r.task]
        c = out.setdefault((suite, slug, r.agent_runner, r.agent_model or "-", r.condition), Counter())
        c["trials"] += 1
        c["invalid"] += not r.valid
        c["valid"] += r.valid
        c["passed"] += r.valid and r.grade.contract_pass
    return out


def _wilson(passed: int, n: int) -> tuple[float, float, float]:
    p, z = passed / n, 1.96
    centre, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return p, max(0.0, (centre - half) / (1 + z * z / n)), min(1.0, (centre + half) / (1 + z * z / n))


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sdkcmp") / "evals.duckdb"
    store = TrialStore(path)
    store.record_trials(_records())
    with store.connect() as con:
        materialize_models(con)
    return path


def test_sdk_comparison_figures_match_the_rows(db: Path) -> None:
    counts = _counts(_records())
    with duckdb.connect(str(db), read_only=True) as con:
        cursor = con.execute("SELECT * FROM sdk_comparison")
        names = [d[0] for d in cursor.description]
        rows = [dict(zip(names, v, strict=True)) for v in cursor.fetchall()]
    got = {(r["agent_runner"], r["agent_model"], r["condition"], r["task_slug"]): r for r in rows}
    # Shared slugs per agent x condition (project-board has no mcp-python side; claude and replay stay apart).
    assert sorted(got) == sorted([
        ("claude", "sonnet-test", NS, "*"), ("claude", "sonnet-test", NS, "basic-tool-server"),
        ("codex", "gpt-test", NS, "*"), ("codex", "gpt-test", NS, "basic-tool-server"),
        ("codex", "gpt-test", NS, "docs-lookup-server"), ("codex", "gpt-test", NS, "stateful-ticket-queue"),
        ("codex", "gpt-test", SK, "*"), ("codex", "gpt-test", SK, "basic-tool-server"),
        ("replay", "-", NS, "*"), ("replay", "-", NS, "basic-tool-server"),
    ])
    assert {(r["suite_a"], r["suite_b"]) for r in rows} == {(PY, USE)}
    assert [r["recorded_sessions"] for r in rows] == [r["agent_runner"] == "replay" for r in rows]
    basic = got[("codex", "gpt-test", NS, "basic-tool-server")]
    assert (basic["task_a"], basic["task_b"]) == ("py-v4-01-basic-tool-server", "v5-01-basic-tool-server")
    for key, row in got.items():
        agent, model, condition, slug = key
        slugs = ([slug] if slug != "*" else
                 [s for (a, m, c, s), r in got.items() if (a, m, c) == key[:3] and s != "*" and r["paired_tasks"]])
        sides = []
        for suite, s in ((PY, "a"), (USE, "b")):
            total = sum((counts[(suite, x, agent, model, condition)] for x in slugs), Counter())
            assert (row[f"passed_{s}"], row[f"valid_scored_{s}"], row[f"trials_{s}"], row[f"invalid_{s}"]) == (
                total["passed"], total["valid"], total["trials"], total["invalid"]), (key, s)
            if total["valid"]:
                sides.append(_wilson(total["passed"], total["valid"]))
                assert (row[f"pass_rate_{s}"], row[f"wilson_low_{s}"], row[f"wilson_high_{s}"]) == pytest.approx(
                    sides[-1]), (key, s)
            else:
                assert row[f"pass_rate_{s}"] is None and row[f"wilson_low_{s}"] is None
        if len(sides) == 2:
            diff = stats.newcombe(sides[0], sides[1])
            assert (row["delta"], row["newcombe_low"], row["newcombe_high"]) == pytest.approx(
                (diff.delta, diff.low, diff.high)), key
        else:
            assert row["delta"] is None and row["newcombe_low"] is None
    # The pool is over the paired slugs only: docs-lookup (no valid mcp-python trial) stays out of it.
    pooled = got[("codex", "gpt-test", NS, "*")]
    assert pooled["paired_tasks"] == 2 and got[("codex", "gpt-test", NS, "docs-lookup-server")]["paired_tasks"] == 0
    # By hand, so a formula shared by the model and this test cannot hide a slip: mcp-python 1/5, mcp-use 5/6.
    assert (pooled["passed_a"], pooled["valid_scored_a"], pooled["passed_b"], pooled["valid_scored_b"]) == (1, 5, 5, 6)
    assert pooled["delta"] == pytest.approx(5 / 6 - 1 / 5) and pooled["newcombe_low"] > 0  # beyond the noise


def test_sdk_comparison_in_scorecard_and_compare(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_evals_pipeline.cli import main

    with duckdb.connect(str(db)) as con:
        con.execute("INSERT INTO runs (run_id, batch_id, agent_runner, agent_model, source) "
                    "VALUES ('R2', 'B2', 'codex', 'gpt-test', 'pipeline')")
        report = render_report("R2", con, run_dir=db.parent)
    section = report.split("## SDKs on one contract", 1)[1].split("\n## ", 1)[0]
    assert f"`{PY}` vs `{USE}`" in section
    assert "codex/gpt-test `noskill+blank`, 2 shared task(s): a 1/5 pass, 20%" in section
    assert "b 5/6 pass, 83%" in section and "change +63 pts" in section
    assert "claude" not in section and "replay" not in section  # the run's own agent only
    assert "| codex/gpt-test | noskill+blank | docs-lookup-server | py-v5-03-docs-lookup-server | 0/0 pass" in section

    monkeypatch.setenv("MCP_EVALS_DB", str(db))
    runner = CliRunner()
    # Named the other way round: mcp-use is a, and the change and its interval flip sign.
    done = runner.invoke(main, ["compare", "--suite", USE, "--suite", PY, "--json"])
    assert done.exit_code == 0, done.output
    pooled = {(r["agent"], r["condition"]): r for r in json.loads(done.output) if r["taskSlug"] == "*"}
    codex = pooled[("codex/gpt-test", NS)]
    assert (codex["a"]["passed"], codex["a"]["valid"], codex["b"]["passed"], codex["b"]["valid"]) == (5, 6, 1, 5)
    assert codex["change"]["delta"] == pytest.approx(1 / 5 - 5 / 6) and codex["change"]["high"] < 0
    assert pooled[("replay/-", NS)]["recordedSessions"] is True
    text = runner.invoke(main, ["compare", "--suite", USE, "--suite", PY])
    assert text.exit_code == 0 and "a 5/6 pass, 83%" in text.output and "change -63 pts" in text.output
    # Bad input: exit 2 naming what is wrong, nothing printed as a comparison.
    for args, message in ((["compare", "--suite", USE], "two --suite"),
                          (["compare", "--suite", USE, "--suite", "nope"], "no such suite 'nope'"),
                          (["compare", "B1", "B2", "--suite", USE, "--suite", PY], "either two batches")):
        bad = runner.invoke(main, args)
        assert bad.exit_code == 2 and message in bad.output, (args, bad.output)
