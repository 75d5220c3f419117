"""Legacy import and the scorecard: imported runs of the earlier harness render the figures of their own report.md.

tests/fixtures/legacy_runs/ holds eight real run directories chosen to cover 100%, 0% with contract failures,
invalid trials, pass^k present and absent, and a 0/0 run. The renderer reads the SQL model tables, so these tests
check the import, the models and the formatting together against the earlier harness's own scorecards.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from mcp_evals_pipeline.contracts.grade import Check, TrialGrade
from mcp_evals_pipeline.contracts.records import RunFile, RunManifest, TrialPerf, TrialRecord
from mcp_evals_pipeline.legacy_import import IMPORTED_REPORT, import_runs
from mcp_evals_pipeline.reporting.scorecard import MEMO_CHARS, ModelTablesMissing, memo_excerpt, render_report
from mcp_evals_pipeline.runs import load_run_file
from mcp_evals_pipeline.sql_models import materialize_models
from mcp_evals_pipeline.store import TrialStore
from mcp_evals_pipeline.versions import GRADER_VERSION

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "legacy_runs"
FIXTURE_RUNS = sorted(p.name for p in FIXTURE.iterdir() if (p / "run.json").is_file())


# --- the figures of a scorecard, parsed the same way from the legacy report and from ours ---------------------------

def _sections(text: str) -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {}
    for block in re.split(r"^## ", text, flags=re.MULTILINE)[1:]:
        head, _, body = block.partition("\n")
        sections[head.strip()] = [line for line in body.splitlines() if line.strip()]
    return sections


def figures(text: str) -> dict[str, object]:
    sections = _sections(text)
    pass_rate = [h for h in sections if h.startswith("Pass rate:")]
    matrix = [line for line in sections["Matrix"] if line.startswith("| ") and not line.startswith("| Task ")]
    pass_k = [line for line in sections.get("pass^k", []) if line.startswith("pass^")]
    perf_lines = sections["Performance (passing trials)"]
    pairs = (line[2:].partition(":") for line in perf_lines if line.startswith("- "))
    perf = {name.strip(): value.strip() for name, _, value in pairs}
    failure = sections["Failure breakdown"]
    split = next(i for i, line in enumerate(failure) if line.startswith("Invalid trials:"))
    return {
        "pass_rate": pass_rate,
        "matrix": matrix,
        "pass_k": pass_k,
        "performance": perf or perf_lines,
        "contract_failures": [line for line in failure[:split] if line.startswith("- ")] or failure[:split],
        "invalid": failure[split],
        "invalid_reasons": [line for line in failure[split + 1:] if line.startswith("- ")],
        "sdk_path": [line for line in sections["SDK path"] if line.startswith("- ")],
    }


def _materialized_store(tmp: Path, source: Path) -> tuple[TrialStore, Path, list[str]]:
    store = TrialStore(tmp / "evals.duckdb")
    results = tmp / "runs"
    summary = import_runs(source, store, results)
    assert summary.errors == []
    with store.connect() as con:
        materialize_models(con)
    return store, results, summary.run_ids


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> tuple[TrialStore, Path, list[str]]:
    return _materialized_store(tmp_path_factory.mktemp("legacy"), FIXTURE)


# --- import -----------------------------------------------------------------------------------------------------

def test_fixture_covers_the_cases() -> None:
    """Guards the fixture selection itself: each case the scorecard must reproduce is present."""
    reports = [figures((FIXTURE / run / "report.md").read_text()) for run in FIXTURE_RUNS]
    heads = [r["pass_rate"][0] for r in reports]
    assert any(h.startswith("Pass rate: 100%") for h in heads)
    assert any(h.startswith("Pass rate: 0%") and r["contract_failures"][0].startswith("- `contract.")
               for h, r in zip(heads, reports, strict=True))
    assert any("(0/0 valid" in h for h in heads)
    assert any(r["invalid"] != "Invalid trials: 0" for r in reports)
    assert any(r["pass_k"] for r in reports) and any(not r["pass_k"] for r in reports)
    assert any(r["performance"] != ["No passing trials."] for r in reports)


def test_import_copies_files_and_fills_trial_fields(imported: tuple[TrialStore, Path, list[str]]) -> None:
    store, results, run_ids = imported
    assert sorted(run_ids) == FIXTURE_RUNS
    for run in FIXTURE_RUNS:
        source, dest = FIXTURE / run, results / run
        assert (dest / "run.json").read_bytes() == (source / "run.json").read_bytes()
        assert (dest / IMPORTED_REPORT).read_text() == (source / "report.md").read_text()
        assert not (dest / "report.md").exists()  # reserved for our own rendering
        for memo in source.glob("trials/*/memo.md"):
            assert (dest / memo.relative_to(source)).read_text() == memo.read_text()
    expected = sum(len(json.loads((FIXTURE / r / "run.json").read_text())["trials"]) for r in FIXTURE_RUNS)
    rows = store.query("SELECT * FROM trials")
    assert len(rows) == expected
    for row in rows:
        run = json.loads((FIXTURE / str(row["run_id"]) / "run.json").read_text())
        assert row["batch_id"] == run["batchId"]
        assert str(row["batch_date"]) == run["startedAt"][:10]
        assert row["grader_version"] == run["manifest"]["graderVersion"]
        assert row["source"] == "import"
    runs = store.query("SELECT run_id, source, run_dir FROM runs ORDER BY run_id")
    assert [r["run_id"] for r in runs] == FIXTURE_RUNS
    assert all(r["source"] == "import" and r["run_dir"] == str(results / r["run_id"]) for r in runs)


def test_import_twice_changes_nothing(tmp_path: Path) -> None:
    store = TrialStore(tmp_path / "evals.duckdb")
    first = import_runs(FIXTURE, store, tmp_path / "runs")
    snapshot = store.query("SELECT * FROM trial_attempts ORDER BY slot, attempt"), store.query(
        "SELECT * FROM runs ORDER BY run_id")
    mtimes = {p: p.stat().st_mtime_ns for p in (tmp_path / "runs").rglob("*") if p.is_file()}
    second = import_runs(FIXTURE, store, tmp_path / "runs")
    assert first.files_written > 0 and second.files_written == 0
    assert (second.runs, second.trials) == (first.runs, first.trials)
    assert (store.query("SELECT * FROM trial_attempts ORDER BY slot, attempt"),
            store.query("SELECT * FROM runs ORDER BY run_id")) == snapshot
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "runs").rglob("*") if p.is_file()} == mtimes


def test_malformed_run_is_reported_and_skipped(tmp_path: Path) -> None:
    source = tmp_path / "source"
    good = FIXTURE_RUNS[0]
    shutil.copytree(FIXTURE / good, source / good)
    (source / "broken-json").mkdir()
    (source / "broken-json" / "run.json").write_text("{not json")
    (source / "missing-field").mkdir()
    (source / "missing-field" / "run.json").write_text(json.dumps({"runId": "x", "trials": []}))
    # A run.json that parses but holds an id that is a path is refused outright, nothing imported: not skipped
    # (tests/test_hostile_input.py).
    # _tasks holds task contracts of the earlier harness, never runs, whatever its files are called
    (source / "_tasks" / "t").mkdir(parents=True)
    (source / "_tasks" / "t" / "run.json").write_text("{}")
    store = TrialStore(tmp_path / "evals.duckdb")
    summary = import_runs(source, store, tmp_path / "runs")
    assert summary.run_ids == [good]
    assert sorted(e.path for e in summary.errors) == [source / "broken-json" / "run.json",
                                                        source / "missing-field" / "run.json"]
    assert all(str(e.path) in e.message for e in summary.errors)
    assert "batchId" in next(e.message for e in summary.errors if "missing-field" in str(e.path))
    assert store.query("SELECT DISTINCT run_id FROM trials") == [{"run_id": good}]


# --- the scorecard against the legacy scorecards ----------------------------------------------------------------

@pytest.mark.parametrize("run_id", FIXTURE_RUNS)
def test_report_reproduces_legacy_figures(imported: tuple[TrialStore, Path, list[str]], run_id: str) -> None:
    store, results, _ = imported
    legacy = (results / run_id / IMPORTED_REPORT).read_text()
    with store.connect() as con:
        ours = render_report(run_id, con)
    assert figures(ours) == figures(legacy)
    # the header too: same title, date and run line
    assert ours.splitlines()[:3] == legacy.splitlines()[:3]


def test_memos_section(imported: tuple[TrialStore, Path, list[str]]) -> None:
    store, _, _ = imported
    with store.connect() as con:
        reports = {run: render_report(run, con) for run in FIXTURE_RUNS}
    zero = next(r for r in FIXTURE_RUNS if "(0/0 valid" in reports[r])
    assert _sections(reports[zero])["Memos"] == ["No notable memos."]
    with_memo = "v2-01-basic-tool-server--noskill+blank--codex--2026-08-03T22-44-20"
    memo = "trials/v2-01-basic-tool-server--noskill+blank--t1/memo.md"
    [line] = _sections(reports[with_memo])["Memos"]
    assert line.startswith(f"- `v2-01-basic-tool-server` · `noskill+blank` · trial 1 — [{memo}]({memo}): The agent")
    # memo files the earlier harness never published are still linked, and said to be missing
    assert all(line.endswith("(memo file missing)")
               for line in _sections(reports["v2-08-openapi-order-service--noskill+blank--codex--2026-08-10T14-27-04"])[
                   "Memos"])


def test_memo_excerpt(tmp_path: Path) -> None:
    memo = tmp_path / "memo.md"
    memo.write_text("Nothing notable.\n")
    assert memo_excerpt(memo) is None
    memo.write_text("Short first paragraph\nwrapped.\n\nSecond paragraph.\n")
    assert memo_excerpt(memo) == "Short first paragraph wrapped."
    memo.write_text("word " * 50 + "`a code span that straddles the cut " + "x " * 200)
    excerpt = memo_excerpt(memo)
    assert excerpt is not None and len(excerpt) <= MEMO_CHARS + 2 and excerpt.endswith(" …")
    assert excerpt.count("`") % 2 == 0
    assert memo_excerpt(tmp_path / "absent.md") == "(memo file missing)"


def test_report_needs_the_models(tmp_path: Path) -> None:
    store = TrialStore(tmp_path / "evals.duckdb")
    import_runs(FIXTURE, store, tmp_path / "runs")
    with store.connect() as con, pytest.raises(ModelTablesMissing, match="materialize_models"):
        render_report(FIXTURE_RUNS[0], con)


@pytest.mark.long
def test_all_legacy_reports_reproduce(tmp_path: Path, legacy_runs: Path) -> None:
    store, results, run_ids = _materialized_store(tmp_path, legacy_runs)
    assert len(run_ids) == len(list(legacy_runs.glob("*/run.json"))) == 259
    checked = []
    with store.connect() as con:
        for run_id in run_ids:
            legacy_path = results / run_id / IMPORTED_REPORT
            if not legacy_path.exists():
                continue
            legacy = legacy_path.read_text()
            ours = render_report(run_id, con)
            assert figures(ours) == figures(legacy), run_id
            assert ours.splitlines()[:3] == legacy.splitlines()[:3], run_id
            checked.append(run_id)
    assert len(checked) == len(list(legacy_runs.glob("*/report.md"))) == 48


# --- our own sections, on a synthetic run the legacy data never had ---------------------------------------------

RUN_ID = "synthetic--all-conditions--2026-11-30T14-00-00"


def _trial(task: str, condition: str, n: int, *, passed: bool, duration_ms: int = 30_000, scored: bool = True,
           valid: bool = True, memo: str | None = None) -> TrialRecord:
    if not valid:
        grade = TrialGrade(contract_pass=False, checks=[], failure_code="infra.agent", scored_for_pass_rate=False)
    elif passed:
        grade = TrialGrade(contract_pass=True, checks=[Check(id="start", passed=True)], failure_code=None,
                           sdk_path="official-sdk", scored_for_pass_rate=scored)
    else:
        check = Check(id="imports", passed=False, detail="no mcp import") if not scored else Check(
            id="call:add:1", passed=False, detail='add({"a":1,"b":2}) -> "4" did not match 3')
        grade = TrialGrade(contract_pass=False, checks=[check], failure_code=f"contract.{check.stage}",
                           sdk_path="official-sdk", scored_for_pass_rate=scored)
    return TrialRecord(
        task=task, condition=condition, trial=n, agent_runner="replay", agent_model=None, grader_version="3.0.0",
        batch_id="2026-11-30", batch_date="2026-11-30", run_id=RUN_ID, valid=valid,
        invalid_reason=None if valid else "infra.agent", grade=grade,
        perf=TrialPerf(duration_ms=duration_ms, turns=n, tool_calls=2 * n, tokens_in=100 * n, tokens_out=10 * n,
                       cost_usd=0.25) if valid else TrialPerf(),
        memo_path=memo, timestamp=f"2026-11-30T14:{n:02d}:00Z",
    )


@pytest.fixture
def synthetic(tmp_path: Path) -> tuple[TrialStore, Path]:
    run_dir = tmp_path / RUN_ID
    (run_dir / "trials" / "a").mkdir(parents=True)
    (run_dir / "trials" / "a" / "memo.md").write_text("Nothing notable.\n")
    (run_dir / "trials" / "b").mkdir(parents=True)
    (run_dir / "trials" / "b" / "memo.md").write_text("The agent read `server.py` twice.\n\nMore.\n")
    trials = [
        # alpha: noskill 2/3, skill 3/3 (+ one invalid skill trial); medians of the passing five below
        _trial("alpha", "noskill+blank", 1, passed=True, duration_ms=10_000, memo="trials/a/memo.md"),
        _trial("alpha", "noskill+blank", 2, passed=True, duration_ms=20_000),
        _trial("alpha", "noskill+blank", 3, passed=False, memo="trials/b/memo.md"),
        _trial("alpha", "skill+blank", 1, passed=True, duration_ms=59_500),
        _trial("alpha", "skill+blank", 2, passed=True, duration_ms=70_000),
        _trial("alpha", "skill+blank", 3, passed=True, duration_ms=80_000),
        _trial("alpha", "skill+blank", 4, passed=False, valid=False),
        # broken: every trial fails the same call check: a suspect contract
        *(_trial("broken", cond, n, passed=False) for cond in ("noskill+blank", "skill+blank") for n in (1, 2, 3)),
        # static: a source-imports task, reported apart
        _trial("static", "noskill+blank", 1, passed=True, scored=False),
        _trial("static", "noskill+blank", 2, passed=False, scored=False),
    ]
    store = TrialStore(tmp_path / "evals.duckdb")
    store.record_trials(trials)
    store.record_run(RunFile(run_id=RUN_ID, batch_id="2026-11-30", started_at="2026-11-30T14:00:00Z",
                             agent_runner="replay", manifest=RunManifest(grader_version="3.0.0", sandbox="local"),
                             trials=trials), run_dir)
    with store.connect() as con:
        materialize_models(con)
    return store, run_dir


def test_our_sections(synthetic: tuple[TrialStore, Path]) -> None:
    store, _ = synthetic
    with store.connect() as con:
        report = render_report(RUN_ID, con)
    lines = report.splitlines()
    assert lines[0] == "# MCP server SDK agentic eval — 2026-11-30"
    assert lines[2] == (f"Run `{RUN_ID}` · batch `2026-11-30` · agent: replay (no model) · judge: none · "
                        "grader 3.0.0 · sandbox local · 15 trial(s)")
    sections = _sections(report)
    got = figures(report)
    assert got["pass_rate"] == ["Pass rate: 42% (5/12 valid scored trials)"]
    assert "- `noskill+blank`: 33% (2/6 valid scored trials, 0 invalid)" in sections[got["pass_rate"][0]]
    assert "- `skill+blank`: 50% (3/6 valid scored trials, 1 invalid)" in sections[got["pass_rate"][0]]
    assert got["matrix"] == ["| alpha | noskill+blank | 2/3 |", "| alpha | skill+blank | 3/3 |",
                             "| broken | noskill+blank | 0/3 |", "| broken | skill+blank | 0/3 |"]
    assert got["pass_k"] == ["pass^3: 25% (1/4 task×condition cells all-pass, min 3 trials/cell)"]
    # unbiased estimator: pass^1 = (2/3 + 1 + 0 + 0)/4, pass^2 = (1/3 + 1)/4, pass^3 = 1/4
    assert "Curve (unbiased estimate over 4 cell(s)): pass^1 42% · pass^2 33% · pass^3 25%" in sections["pass^k"]
    assert got["performance"] == {
        "Median duration": "1m00s",  # 59.5 s rounds half up, as the seed's Math.round does
        "Median turns": "2",
        "Median tool calls": "4",
        "Median tokens in/out": "200 / 20",
        "Total cost": "$3.50",  # 14 valid trials × $0.25 (static ones included: they cost money too)
        "Cost per success": "$0.70",
    }
    assert got["contract_failures"] == ["- `contract.calls`: 7"]
    assert (got["invalid"], got["invalid_reasons"]) == ("Invalid trials: 1", ["- `infra.agent`: 1"])
    assert got["sdk_path"] == ["- `official-sdk`: 14", "- `unknown`: 1"]
    assert sections["Static adoption"][-1] == "| static | noskill+blank | 1/2 |"
    assert sections["Skill deltas"][0] == ("- `blank` pooled: skill+blank 3/6 (50%) vs noskill+blank 2/6 (33%): "
                                           "+17 pts; paired over 2 task(s): +17 pts")
    # alpha up (3/3 vs 2/3), broken tied (0/3 both): n = 1, p = 2 * 1/2 = 1; 370 trials to see 33% -> 43%
    assert sections["Skill deltas"][1] == ("  - sign test over tasks: 1 up, 0 down, 1 tied, two-sided p = 1; trials "
                                           "per condition to see a 10-point change at 33%: 370")
    assert "| blank | alpha | 3/3 | 2/3 | +33 pts |" in sections["Skill deltas"]
    assert "| blank | broken | 0/3 | 0/3 | +0 pts |" in sections["Skill deltas"]
    [warning] = sections["Suspect markers"]
    assert "`broken`" in warning and "`call:add:1`" in warning and "6 of 6 failed trials (100%)" in warning
    assert 'did not match 3' in warning and "Read the contract before blaming the SDK." in warning
    assert report.index("## Suspect markers") < report.index("## Pass rate")  # loud: before the headline
    # "Nothing notable." memos are left out; the other one is quoted
    assert sections["Memos"] == ["- `alpha` · `noskill+blank` · trial 3 — [trials/b/memo.md](trials/b/memo.md): "
                                 "The agent read `server.py` twice."]


def test_suspect_markers_are_as_of_the_runs_batch(synthetic: tuple[TrialStore, Path], tmp_path: Path) -> None:
    """A report re-rendered later reads as it did: an earlier run, recorded after the suspect one, shows no marker
    that only the later batch's failures make."""
    store, _ = synthetic
    early_id, early_day = "early--2026-11-20", "2026-11-20"
    trials = [_trial("broken", "noskill+blank", n, passed=False).model_copy(
        update={"run_id": early_id, "batch_id": early_day, "batch_date": early_day}) for n in (1, 2, 3)]
    store.record_trials(trials)
    store.record_run(RunFile(run_id=early_id, batch_id=early_day, started_at=f"{early_day}T14:00:00Z",
                             agent_runner="replay", manifest=RunManifest(grader_version="3.0.0"), trials=trials),
                     tmp_path / early_id)
    with store.connect() as con:
        materialize_models(con)
        early, late = render_report(early_id, con), render_report(RUN_ID, con)
    assert "## Suspect markers" not in early  # 3 failures as of 2026-11-20: too few
    [warning] = _sections(late)["Suspect markers"]
    assert "9 of 9 failed trials (100%)" in warning and "2 most recent batch(es)" in warning


def test_no_optional_sections_without_content(imported: tuple[TrialStore, Path, list[str]]) -> None:
    store, _, _ = imported
    with store.connect() as con:
        report = render_report("v2-01-basic-tool-server--noskill+blank--codex--2026-08-03T22-44-20", con)
    for heading in ("## Static adoption", "## Skill deltas", "## Suspect markers", "## pass^k"):
        assert heading not in report


def test_our_grader_version_is_never_one_the_imported_runs_carry(legacy_runs: Path) -> None:
    """trends marks a grader boundary where the version string changes: ours equal to the earlier harness's would
    pool their rows and ours as graded alike."""
    theirs = {load_run_file(run).manifest.grader_version for run in legacy_runs.glob("*/run.json")}
    assert theirs and GRADER_VERSION not in theirs


def test_our_header_says_what_the_figures_are(tmp_path: Path) -> None:
    """A replayed batch is labelled as recorded sessions; the judge is named only when it wrote memos; the title
    is the batch date (a later start is named); sub-second medians and a batch without costs say so."""
    run_dir = tmp_path / "runs" / RUN_ID
    (run_dir / "trials" / "a").mkdir(parents=True)
    (run_dir / "trials" / "a" / "memo.md").write_text("<!-- judge: status=skipped -->\n# Judge memo\n\nskipped\n")
    trials = [_trial("alpha", "noskill+blank", n, passed=True, duration_ms=420, memo="trials/a/memo.md")
              for n in (1, 2)]
    trials = [t.model_copy(update={"perf": t.perf.model_copy(update={"cost_usd": None})}) for t in trials]
    store = TrialStore(tmp_path / "evals.duckdb")
    store.record_trials(trials)
    store.record_run(RunFile(run_id=RUN_ID, batch_id="2026-11-30", started_at="2026-12-01T09:00:00Z",
                             agent_runner="replay", judge_model="gpt-judge-test",
                             manifest=RunManifest(grader_version="3.0.0", sandbox="local"), trials=trials), run_dir)
    with store.connect() as con:
        materialize_models(con)
        report = render_report(RUN_ID, con)
    lines = report.splitlines()
    assert lines[0] == "# MCP server SDK agentic eval — 2026-11-30"
    assert "batch `2026-11-30` (started 2026-12-01)" in lines[2]
    assert "judge: skipped (no memo written; memos never move a number)" in lines[2]
    assert lines[4].startswith("> **Recorded sessions, not an agent.**")
    assert "- Median duration: 420 ms" in lines
    assert "- Total cost: - (no trial reports a cost)" in lines
