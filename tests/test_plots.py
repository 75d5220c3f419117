"""The pictures: a trend chart with its bands and boundaries and a task x trial grid, drawn from the model tables,
written beside report.md and embedded in it (and beside the weekly synthesis)."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from mcp_evals_pipeline.contracts.records import TrialRecord
from mcp_evals_pipeline.reporting import plots
from mcp_evals_pipeline.sql_models import materialize_models
from mcp_evals_pipeline.store import TrialStore

from .test_sql_models import NS, SK, _trial


def _colours(path: Path) -> set[tuple[int, int, int]]:
    with Image.open(path) as image:
        return {rgb for _, rgb in image.convert("RGB").getcolors(maxcolors=1 << 20) or []}


def _hex(colour: str) -> tuple[int, int, int]:
    return (int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16))


PASS, FAIL, INVALID = (_hex(plots.COLOURS[plots.OUTCOMES.index(o)]) for o in ("pass", "fail", "invalid"))


def _records(only: str | None = None) -> list[TrialRecord]:
    """Three batches of one series, the grader changing at the third; the first run holds pass, fail, invalid."""
    records = []
    for run, batch, date, grader in (("R1", "B1", "2026-09-01", "1.0"), ("R2", "B2", "2026-09-03", "1.0"),
                                     ("R3", "B3", "2026-09-05", "2.0")):
        records += [_trial(run, batch, date, grader, "t-alpha", NS, 1, "pass"),
                    _trial(run, batch, date, grader, "t-alpha", NS, 2, "fail", check="tools"),
                    _trial(run, batch, date, grader, "t-beta", SK, 1, "infra.agent" if run == "R1" else "pass")]
    return [r for r in records if only is None or r.run_id == only]


@pytest.fixture
def store(tmp_path: Path) -> TrialStore:
    store = TrialStore(tmp_path / "evals.duckdb")
    store.record_trials(_records())
    with store.connect() as con:
        materialize_models(con)
    return store


def test_the_grid_holds_each_trial_where_it_ran(store: TrialStore, tmp_path: Path) -> None:
    with store.connect() as con:
        tasks, columns, cells = plots.grid_cells(con, "R1")
        picture = plots.trial_grid(con, "R1", tmp_path / "grid.png")
        assert plots.trial_grid(con, "no-such-run", tmp_path / "none.png") is None
    assert tasks == ["t-alpha", "t-beta"] and columns == [(NS, 1), (NS, 2), (SK, 1)]
    assert cells == [["pass", "fail", "none"], ["none", "none", "invalid"]]
    assert picture is not None and {PASS, FAIL, INVALID} <= _colours(picture)


def test_the_trend_marks_a_grader_change(store: TrialStore, tmp_path: Path) -> None:
    with store.connect() as con:
        boundaries = con.execute("SELECT batch_id FROM trends WHERE condition = '*' AND grader_boundary").fetchall()
        picture = plots.trend_chart(con, tmp_path / "trend.png")
        before = plots.trend_chart(con, tmp_path / "early.png", until="2026-09-03")
        assert plots.trend_chart(con, tmp_path / "none.png", suites=["no-such-suite"]) is None
    assert boundaries == [("B3",)]
    assert picture is not None and before is not None
    with Image.open(picture) as image:
        assert image.size[0] > 500 and image.size[1] > 200
    red = _hex(plots.GRADER_LINE)
    assert red in _colours(picture)
    assert red not in _colours(before)  # up to the second batch the grader never changed: no line, no legend


def test_the_scorecard_embeds_its_pictures(store: TrialStore, tmp_path: Path) -> None:
    from mcp_evals_pipeline.defs.reports.assets import write_scorecard

    run_dir = tmp_path / "runs" / "R2"
    for record in _records("R2"):
        (run_dir / "trials" / record.trial_name).mkdir(parents=True)
        (run_dir / "trials" / record.trial_name / "trial.json").write_text(record.model_dump_json())
    report = write_scorecard("R2", tmp_path / "runs", store)
    text = report.read_text()
    assert "## Pictures" in text and "](trend.png)" in text and "](grid.png)" in text
    assert {PASS, FAIL} <= _colours(run_dir / "grid.png") and (run_dir / "trend.png").is_file()


def test_the_trend_panels_share_dates_and_colours(tmp_path: Path) -> None:
    """Two suites: codex in both, claude only in the second (its one point late). The panels share one date axis
    and each shows its dates, every point sits at its own date, a series has one colour in every panel, and
    replay's recorded sessions are drawn only when named."""
    import datetime as dt

    import matplotlib.dates as mdates

    def at(suite: str, run: str, date: str, agent: str, model: str | None) -> TrialRecord:
        return _trial(run, run, date, "1.0", f"t-{suite}", NS, 1, "pass", agent=agent,
                      model=model).model_copy(update={"suite": suite})  # type: ignore[arg-type]

    store = TrialStore(tmp_path / "evals.duckdb")
    store.record_trials([at("mcp-use", "R1", "2026-09-01", "codex", "m"),
                         at("mcp-use", "R2", "2026-10-01", "codex", "m"),
                         at("mcp-python", "R3", "2026-10-01", "codex", "m"),
                         at("mcp-python", "R4", "2026-12-02", "claude", "s"),
                         at("mcp-use", "R5", "2026-11-01", "replay", None)])
    with store.connect() as con:
        materialize_models(con)
        rows = plots.trend_rows(con)
        replay = plots.trend_rows(con, agents=("replay",))
    assert {r["agent_runner"] for r in rows} == {"codex", "claude"}
    assert [(r["agent_runner"], str(r["batch_date"])) for r in replay] == [("replay", "2026-11-01")]
    assert plots.series_label("replay", None) == "replay (no model) (recorded sessions)"
    fig = plots.trend_figure(rows)
    fig.canvas.draw()
    top, bottom = fig.axes
    assert top.get_xlim() == bottom.get_xlim()  # one date axis
    for ax in (top, bottom):
        shown = [t.get_text() for t in ax.get_xticklabels() if t.get_visible() and t.get_text()]
        assert shown and all(dt.date.fromisoformat(t) for t in shown), shown  # every panel shows its dates
    lines = {(ax.get_title(loc="left"), line.get_label()): line for ax in (top, bottom) for line in ax.get_lines()
             if not line.get_label().startswith("_")}
    claude = lines[("Pass rate per batch: suite mcp-python", "claude/s")]
    assert list(mdates.date2num(claude.get_xdata())) == [mdates.date2num(dt.date(2026, 12, 2))]
    codex = {line.get_color() for (_, label), line in lines.items() if label == "codex/m"}
    assert len(codex) == 1 and claude.get_color() not in codex  # one colour per series, in every panel
