"""The release a batch ran on and the pass rate across a release boundary (reporting/release_boundary.py), in the
scorecard, the weekly synthesis's figures and `mcp-evals compare --sdk A B`, on a real DuckDB store: every figure
checked against counts taken from the trial rows written here, intervals computed apart in Python."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from mcp_evals_pipeline.reporting import release_boundary, stats
from mcp_evals_pipeline.reporting.scorecard import render_report
from mcp_evals_pipeline.sql_models import materialize_models
from mcp_evals_pipeline.store import TrialStore
from mcp_evals_pipeline.synthesis.figures import compute_week_stats
from mcp_evals_pipeline.synthesis.render import render_stats

from .test_sdk_comparison import _wilson
from .test_sql_models import NS, SK, _trial

USE, PY = "mcp-use", "mcp-python"
BASIC, QUEUE, DOCS, PY_BASIC = ("v5-01-basic-tool-server", "v5-02-stateful-ticket-queue", "v4-03-docs-lookup-server",
                                "py-v4-01-basic-tool-server")
SUITE = {BASIC: USE, QUEUE: USE, DOCS: USE, PY_BASIC: PY}
PACKAGE = {USE: "mcp-use", PY: "mcp"}
OFFICIAL_TS = ("@modelcontextprotocol/sdk", "1.20.0")  # an agent of the mcp-use suite that used another SDK
BATCHES = {"B1": "2026-09-01", "B2": "2026-09-03", "B3": "2026-09-05", "B4": "2026-09-07"}


def _row(batch: str, task: str, condition: str, n: int, outcome: str, installed: object = "suite",
         agent: str = "codex", model: str | None = "gpt-test", latest: str | None = None):  # type: ignore[no-untyped-def]
    """`installed`: a version of the suite's SDK, (package, version) of another, or None (nothing installed)."""
    run = f"R-{batch}-{agent}"
    package, version = (installed if isinstance(installed, tuple) else
                        (PACKAGE[SUITE[task]], installed) if installed else (None, None))
    return _trial(run, batch, BATCHES[batch], "2.2.0", task, condition, n, outcome, agent=agent, model=model,
                  check="tools").model_copy(update={"sdk_version": version, "sdk_package": package,
                                                    "sdk_registry_latest": latest})


def _records() -> list:
    """codex/gpt-test unless said; mcp-use's installed release per batch: B1, B2 2.6.0; B3 2.7.0 (two trials
    installed mcp-use 2.7.0, three the official TS SDK: only the suite's package names the release; two failed
    before installing anything and still count); B4 2.8.0 from the registry alone (no trial recorded an install),
    a task B3 did not run.
        B1  mcp-use  NS: basic P P F, queue F F F       SK: basic P P
        B2  mcp-use  NS: basic F F F, queue F F I       mcp-python NS: P F (mcp 2.6.0)   replay basic P
        B3  mcp-use  NS: basic P P P(-), queue P P P(official) F(-)   mcp-python NS: P P (mcp 2.7.0)   replay basic P
        B4  mcp-use  NS: docs P F (registry latest 2.8.0)"""
    rows = [_row("B1", BASIC, NS, n, o, "2.6.0") for n, o in enumerate(("pass", "pass", "fail"), 1)]
    rows += [_row("B1", QUEUE, NS, n, "fail", "2.6.0") for n in (1, 2, 3)]
    rows += [_row("B1", BASIC, SK, n, "pass", "2.6.0") for n in (1, 2)]
    rows += [_row("B2", BASIC, NS, n, "fail", "2.6.0") for n in (1, 2, 3)]
    rows += [_row("B2", QUEUE, NS, n, o, "2.6.0" if o == "fail" else None)
             for n, o in enumerate(("fail", "fail", "infra.agent"), 1)]
    rows += [_row("B2", PY_BASIC, NS, n, o, "2.6.0") for n, o in enumerate(("pass", "fail"), 1)]
    rows += [_row("B3", BASIC, NS, n, "pass", v) for n, v in enumerate(("2.7.0", "2.7.0", None), 1)]
    rows += [_row("B3", QUEUE, NS, n, o, v) for n, (o, v) in enumerate(
        (("pass", OFFICIAL_TS), ("pass", OFFICIAL_TS), ("pass", OFFICIAL_TS), ("fail", None)), 1)]
    rows += [_row("B3", PY_BASIC, NS, n, "pass", "2.7.0") for n in (1, 2)]
    rows += [_row(b, BASIC, NS, 1, "pass", v, agent="replay", model=None) for b, v in (("B2", "2.6.0"),
                                                                                     ("B3", "2.7.0"))]
    rows += [_row("B4", DOCS, NS, n, o, None, latest="2.8.0") for n, o in enumerate(("pass", "fail"), 1)]
    return rows


def _counts(batch: str, suite: str, condition: str) -> tuple[int, int]:
    """(passed, valid) of codex/gpt-test's trials of a batch x suite x condition ('*': all), from the rows."""
    rows = [r for r in _records() if r.batch_id == batch and SUITE[r.task] == suite and r.agent_runner == "codex"
            and condition in ("*", r.condition) and r.valid]
    return sum(r.grade.contract_pass for r in rows), len(rows)


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("release") / "evals.duckdb"
    store = TrialStore(path)
    store.record_trials(_records())
    with store.connect() as con:
        materialize_models(con)
        for batch in BATCHES:
            con.execute("INSERT INTO runs (run_id, batch_id, agent_runner, agent_model, source) VALUES "
                        "(?, ?, 'codex', 'gpt-test', 'pipeline')", [f"R-{batch}-codex", batch])
        con.execute("INSERT INTO runs (run_id, batch_id, agent_runner, source) VALUES "
                    "('R-B3-replay', 'B3', 'replay', 'pipeline')")
    return path


def test_releases_and_boundaries_match_the_rows(db: Path) -> None:
    with duckdb.connect(str(db)) as con:
        held = release_boundary.held_releases(con)
        b3 = {r.suite: r for r in release_boundary.batch_releases(con, "B3")}
        b4 = release_boundary.batch_releases(con, "B4")
        found = release_boundary.boundaries(con)
        early = release_boundary.boundaries(con, "2026-09-05")
    assert held == {USE: ["2.6.0", "2.7.0", "2.8.0"], PY: ["2.6.0", "2.7.0"]}
    # The suite's own package names the release (three trials installed another SDK); every agent's trials count
    # (the release is the batch's: replay's one trial too), those that installed nothing included.
    assert (b3[USE].release, b3[USE].installed, b3[USE].installed_trials, b3[USE].trials) == ("2.7.0", True, 3, 8)
    assert [(r.release, r.installed, r.registry_latest) for r in b4] == [("2.8.0", False, "2.8.0")]
    got = {(b.suite, b.condition, b.before.batch_id, b.after.batch_id): b for b in found}
    # Real models only (replay ran B2 and B3 on two releases: no boundary); SK ran once: none.
    assert sorted(got) == sorted([(USE, "*", "B2", "B3"), (USE, NS, "B2", "B3"), (USE, "*", "B3", "B4"),
                                  (USE, NS, "B3", "B4"), (PY, "*", "B2", "B3"), (PY, NS, "B2", "B3")])
    assert {b.agent for b in found} == {"codex/gpt-test"}
    for (suite, condition, before, after), b in got.items():
        (pb, nb), (pa, na) = _counts(before, suite, condition), _counts(after, suite, condition)
        assert (b.before.passed, b.before.valid, b.after.passed, b.after.valid) == (pb, nb, pa, na)
        diff = stats.newcombe(_wilson(pb, nb), _wilson(pa, na))
        assert (b.delta, b.low, b.high) == pytest.approx((diff.delta, diff.low, diff.high))
        assert b.beyond_noise == (diff.low > 0 or diff.high < 0)
    # By hand: 0/5 on 2.6.0 -> 6/7 on 2.7.0 moved beyond the noise; 6/7 -> 1/2 on 2.8.0 (another task) did not.
    jump, drop = got[(USE, NS, "B2", "B3")], got[(USE, NS, "B3", "B4")]
    assert (jump.before.release, jump.after.release, jump.beyond_noise, jump.task_set_changed) == (
        "2.6.0", "2.7.0", True, False)
    assert (drop.after.passed, drop.after.valid, drop.beyond_noise, drop.task_set_changed) == (1, 2, False, True)
    assert "moved beyond its noise" in jump.verdict() and "within its noise" in drop.verdict()
    assert "not the release alone" in release_boundary.render_boundary(drop)
    # As of B3's date, B4 is unknown.
    assert {(b.before.batch_id, b.after.batch_id) for b in early} == {("B2", "B3")}


def test_scorecard_and_synthesis_name_the_release_and_the_boundary(db: Path) -> None:
    with duckdb.connect(str(db)) as con:
        report = render_report("R-B3-codex", con, run_dir=db.parent)
        replay = render_report("R-B3-replay", con, run_dir=db.parent)
        first = render_report("R-B1-codex", con, run_dir=db.parent)
        week = compute_week_stats(con, "2026-09-07", days=7)
    section = report.split("## SDK releases", 1)[1].split("\n## ", 1)[0]
    assert "- `mcp-use`: mcp-use 2.7.0 (installed in 3 of 8 trial(s))" in section
    assert "- `mcp-python`: mcp 2.7.0 (installed in 2 of 2 trial(s))" in section
    (pb, nb), (pa, na) = _counts("B2", USE, NS), _counts("B3", USE, NS)
    diff = stats.newcombe(_wilson(pb, nb), _wilson(pa, na))
    assert (f"- `mcp-use` `noskill+blank`: 2.6.0 (batch B2: {pb}/{nb}, 0%) -> 2.7.0 (batch B3: {pa}/{na}, 86%): "
            f"{diff.delta * 100:+.0f} pts (95% {diff.low * 100:+.0f} pts to {diff.high * 100:+.0f} pts): moved beyond "
            "its noise") in section
    assert "- `mcp-python` all conditions: 2.6.0 (batch B2: 1/2, 50%) -> 2.7.0 (batch B3: 2/2, 100%)" in section
    # Recorded sessions name the release but carry no boundary figure; a series' first batch has none to cross.
    replay_section = replay.split("## SDK releases", 1)[1].split("\n## ", 1)[0]
    assert "mcp-use 2.7.0" in replay_section and "Recorded sessions: no release-boundary figure" in replay_section
    assert "No release boundary at this batch for codex/gpt-test" in first
    # The synthesis: the week 2026-09-01..07 holds every boundary of the real models, replay's batches named by
    # nothing of their own (B2 and B3 hold codex trials too).
    assert week.releases is not None
    assert week.releases.batches == [("B1", USE, "2.6.0"), ("B2", PY, "2.6.0"), ("B2", USE, "2.6.0"),
                                     ("B3", PY, "2.7.0"), ("B3", USE, "2.7.0"), ("B4", USE, "2.8.0")]
    assert [(b.suite, b.condition, b.after.batch_id) for b in week.releases.boundaries] == [
        (PY, "*", "B3"), (PY, NS, "B3"), (USE, "*", "B3"), (USE, NS, "B3"), (USE, "*", "B4"), (USE, NS, "B4")]
    text = render_stats(week)
    assert "### SDK releases the batches ran on" in text
    assert release_boundary.render_boundary(week.releases.boundaries[3]) in text
    # A week that starts after B3: the B2 -> B3 boundaries are last week's.
    with duckdb.connect(str(db)) as con:
        later = compute_week_stats(con, "2026-09-08", days=3)
    assert later.releases is not None
    assert {b.after.batch_id for b in later.releases.boundaries} == {"B4"}


def test_compare_sdk_pairs_the_batches_of_two_releases(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_evals_pipeline.cli import main

    monkeypatch.setenv("MCP_EVALS_DB", str(db))
    runner = CliRunner()
    done = runner.invoke(main, ["compare", "--sdk", "2.6.0", "2.7.0", "--suite", USE, "--json"])
    assert done.exit_code == 0, done.output
    result = json.loads(done.output)
    assert (result["a"], result["b"]) == (f"{USE} 2.6.0", f"{USE} 2.7.0")
    heads = {(h["condition"], h["agent"]): h for h in result["headlines"]}
    assert sorted(heads) == [(NS, "codex"), (NS, "replay")]  # per agent runner, as compare pairs batches
    # 2.6.0 = B1 and B2 pooled, over the tasks both releases ran (basic, queue); 2.7.0 = B3.
    rows = [r for r in _records() if r.agent_runner == "codex" and r.condition == NS and r.valid
            and SUITE[r.task] == USE and r.task in (BASIC, QUEUE)]
    a = [r for r in rows if r.batch_id in ("B1", "B2")]
    b = [r for r in rows if r.batch_id == "B3"]
    codex = heads[(NS, "codex")]
    assert (codex["a"]["passed"], codex["a"]["valid"], codex["b"]["passed"], codex["b"]["valid"]) == (
        sum(r.grade.contract_pass for r in a), len(a), sum(r.grade.contract_pass for r in b), len(b))
    diff = stats.newcombe(_wilson(codex["a"]["passed"], codex["a"]["valid"]),
                          _wilson(codex["b"]["passed"], codex["b"]["valid"]))
    assert (codex["change"]["delta"], codex["change"]["low"], codex["change"]["high"]) == pytest.approx(
        (diff.delta, diff.low, diff.high))
    assert codex["tasks"] == 2 and codex["signTest"] == {"up": 2, "down": 0, "tied": 0, "p": 0.5}
    # Two suites ran both releases: the suite must be named; an unknown release names the ones there are.
    for args, message in (
            (["2.6.0", "2.7.0"], "suites mcp-python, mcp-use each ran on 2.6.0 and 2.7.0: name one with --suite"),
            (["2.6.0", "2.7.1", "--suite", USE], "no batch of mcp-use ran on SDK release '2.7.1'; did you mean "
                                                 "2.7.0"),
            (["2.6.0", "2.8.0", "--suite", PY], "no batch of mcp-python ran on SDK release '2.8.0'"),
            (["2.6.0"], "two releases")):
        bad = runner.invoke(main, ["compare", "--sdk", *args])
        assert bad.exit_code == 2 and message in " ".join(bad.output.split()), (args, bad.output)
    typo = runner.invoke(main, ["compare", "--sdk", "2.6.0", "2.7.1"])
    assert typo.exit_code == 2 and ("the releases batches ran on, per suite: mcp-python 2.6.0, 2.7.0; mcp-use 2.6.0, "
                                    "2.7.0, 2.8.0") in " ".join(typo.output.split()), typo.output
    # A release that ran none of the other's tasks: nothing paired, and what each side alone ran is said.
    apart = runner.invoke(main, ["compare", "--sdk", "2.7.0", "2.8.0"])
    assert apart.exit_code == 0, apart.output
    assert "No task has valid trials on both sides: nothing is paired." in apart.output
    assert (f"- only {USE} 2.7.0 ran (what {USE} 2.8.0 lacks): {BASIC}--{NS} (codex), {BASIC}--{NS} (replay), "
            f"{QUEUE}--{NS} (codex)") in apart.output
    assert f"- only {USE} 2.8.0 ran (what {USE} 2.7.0 lacks): {DOCS}--{NS} (codex)" in apart.output
