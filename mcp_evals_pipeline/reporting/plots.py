"""Pictures beside the reports: the trend of each series and a batch's task x trial grid (matplotlib, PNG).

Both read the SQL model tables only (trends, stg_trials, stg_usage_trials), as the reports do, so a picture never
shows a figure the tables do not hold.

- `trend_chart`: pass rate per batch with its Wilson 95% band, one panel per suite, one line per agent x model
  (condition `*`: all conditions of the batch); a batch whose grader version changed is marked by a red dashed
  line, one whose task set changed by a grey dotted line (numbers on either side are not comparable). The panels
  share one date axis (each shows its dates) and a series keeps one colour in every panel. Agents that are not
  real models (replay) are drawn only when asked for by name, and labelled so.
- `trial_grid`: one row per task, one column per condition x trial of one run: pass, fail (build) or miss (usage),
  unsafe (usage, apart), invalid (outside every figure), not scored.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import duckdb
import matplotlib

matplotlib.use("Agg")  # files only: no display on a server or in CI

import matplotlib.dates as mdates
import matplotlib.pyplot as plt  # after the backend is chosen
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from mcp_evals_pipeline.models import agent_label, is_real_model, real_model_sql

OUTCOMES = ("pass", "fail", "unsafe", "invalid", "unscored", "none")
COLOURS = ("#2e7d32", "#c62828", "#6a1b9a", "#9e9e9e", "#c5cae9", "#ffffff")
DPI = 110
GRADER_LINE, TASK_SET_LINE = "#c62828", "#757575"


def _rows(con: duckdb.DuckDBPyConnection, sql: str, params: list[object]) -> list[dict[str, Any]]:
    cursor = con.execute(sql, params)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def trend_rows(con: duckdb.DuckDBPyConnection, *, until: dt.date | str | None = None,
               suites: list[str] | None = None, agents: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """The trends rows a chart draws: condition `*`, up to `until`, of `suites` (default every suite), of `agents`
    (default every real model: replay only when named)."""
    sql = "SELECT * FROM trends WHERE condition = '*' AND pass_rate IS NOT NULL"
    params: list[object] = []
    if until is not None:
        sql, params = sql + " AND batch_date <= ?::DATE", [*params, str(until)]
    if suites:
        sql, params = sql + " AND list_contains(?::VARCHAR[], suite)", [*params, suites]
    if agents:
        sql, params = sql + " AND list_contains(?::VARCHAR[], agent_runner)", [*params, list(agents)]
    else:
        sql += f" AND {real_model_sql()}"
    return _rows(con, sql + " ORDER BY suite, agent_runner, agent_model, batch_date", params)


def series_label(runner: object, model: object) -> str:
    return agent_label(runner, model) + ("" if is_real_model(runner) else " (recorded sessions)")


def trend_figure(rows: list[dict[str, Any]], title: str = "Pass rate per batch") -> Figure:
    """One panel per suite on one shared date axis (a point sits at its own date in every panel, and every panel
    shows its dates); one colour per agent x model series in every panel."""
    panels = sorted({r["suite"] for r in rows})
    labels = sorted({series_label(r["agent_runner"], r["agent_model"]) for r in rows})
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    colour = {label: palette[i % len(palette)] for i, label in enumerate(labels)}
    fig, axes = plt.subplots(len(panels), 1, figsize=(9, 3.2 * len(panels)), squeeze=False, sharex=True)
    for ax, suite in zip(axes[:, 0], panels, strict=True):
        mine = [r for r in rows if r["suite"] == suite]
        for agent in sorted({(r["agent_runner"], r["agent_model"]) for r in mine}, key=str):
            series = [r for r in mine if (r["agent_runner"], r["agent_model"]) == agent]
            dates = [r["batch_date"] for r in series]
            rate = [100 * float(r["pass_rate"]) for r in series]
            label = series_label(*agent)
            ax.plot(dates, rate, marker="o", markersize=3, linewidth=1.4, label=label, color=colour[label])
            ax.fill_between(dates, [100 * float(r["wilson_low"]) for r in series],
                            [100 * float(r["wilson_high"]) for r in series], color=colour[label], alpha=0.15,
                            linewidth=0)
            for r in series:
                if r["grader_boundary"]:
                    ax.axvline(r["batch_date"], color=GRADER_LINE, linestyle="--", linewidth=0.9)
                elif r["task_set_boundary"]:
                    ax.axvline(r["batch_date"], color=TASK_SET_LINE, linestyle=":", linewidth=0.9)
        ax.set_title(f"{title}: suite {suite}", fontsize=10, loc="left")
        ax.set_ylim(-3, 103)
        ax.set_ylabel("pass rate, % (Wilson 95%)", fontsize=8)
        ax.grid(axis="y", alpha=0.3)
        # Shared axes hide the upper panels' dates by default: each panel shows its own.
        ax.tick_params(labelsize=7, labelbottom=True)
        ax.xaxis.set_major_locator(mdates.AutoDateLocator())
        ax.xaxis.set_major_formatter(mdates.DateFormatter("%Y-%m-%d"))
        for tick in ax.get_xticklabels():
            tick.set_rotation(30)
            tick.set_horizontalalignment("right")
        handles, legend_labels = ax.get_legend_handles_labels()
        if any(r["grader_boundary"] for r in mine):
            handles.append(plt.Line2D([], [], color=GRADER_LINE, linestyle="--"))
            legend_labels.append("grader changed")
        if any(r["task_set_boundary"] and not r["grader_boundary"] for r in mine):
            handles.append(plt.Line2D([], [], color=TASK_SET_LINE, linestyle=":"))
            legend_labels.append("task set changed")
        ax.legend(handles, legend_labels, fontsize=7, loc="lower left", ncol=2, frameon=False)
    if len({r["batch_date"] for r in rows}) == 1:  # one date: a day either side, so it sits mid-axis
        only = rows[0]["batch_date"]
        axes[0, 0].set_xlim(only - dt.timedelta(days=1), only + dt.timedelta(days=1))
    fig.tight_layout()
    return fig


def trend_chart(con: duckdb.DuckDBPyConnection, path: Path, *, until: dt.date | str | None = None,
                suites: list[str] | None = None, agents: tuple[str, ...] = (),
                title: str = "Pass rate per batch") -> Path | None:
    """The trend up to `until` (a batch date), for `suites` (default every suite) and `agents` (default every real
    model); None when there is nothing."""
    rows = trend_rows(con, until=until, suites=suites, agents=agents)
    if not rows:
        return None
    return _save(trend_figure(rows, title), path)


_GRID = """
SELECT task, condition, trial,
       CASE WHEN NOT valid THEN 'invalid' WHEN NOT scored THEN 'unscored'
            WHEN passed THEN 'pass' ELSE 'fail' END AS outcome
FROM stg_trials WHERE run_id = ?
UNION ALL
SELECT task, condition, trial,
       CASE WHEN outcome = 'miss' THEN 'fail' WHEN outcome IN ('pass', 'unsafe', 'invalid') THEN outcome
            ELSE 'unscored' END
FROM stg_usage_trials WHERE run_id = ?
"""


def grid_cells(con: duckdb.DuckDBPyConnection, run_id: str) -> tuple[list[str], list[tuple[str, int]],
                                                                     list[list[str]]]:
    """(tasks, (condition, trial) columns, outcome per task x column; "none" where no trial ran)."""
    rows = _rows(con, _GRID, [run_id, run_id])
    tasks = sorted({r["task"] for r in rows})
    columns = sorted({(r["condition"], r["trial"]) for r in rows})
    cells = [["none"] * len(columns) for _ in tasks]
    for r in rows:
        cells[tasks.index(r["task"])][columns.index((r["condition"], r["trial"]))] = r["outcome"]
    return tasks, columns, cells


def trial_grid(con: duckdb.DuckDBPyConnection, run_id: str, path: Path) -> Path | None:
    """The run's task x (condition, trial) grid; None when the run has no trials."""
    tasks, columns, cells = grid_cells(con, run_id)
    if not tasks:
        return None
    index = {name: i for i, name in enumerate(OUTCOMES)}
    grid = [[index[outcome] for outcome in row] for row in cells]
    fig, ax = plt.subplots(figsize=(max(4.0, 0.35 * len(columns) + 3), max(2.0, 0.28 * len(tasks) + 1.4)))
    ax.imshow(grid, cmap=ListedColormap(COLOURS), vmin=0, vmax=len(OUTCOMES) - 1, aspect="auto",
              interpolation="nearest")
    ax.set_yticks(range(len(tasks)), tasks, fontsize=7)
    ax.set_xticks(range(len(columns)), [f"{c} t{t}" for c, t in columns], fontsize=6, rotation=60, ha="right")
    ax.set_xticks([x - 0.5 for x in range(1, len(columns))], minor=True)
    ax.set_yticks([y - 0.5 for y in range(1, len(tasks))], minor=True)
    ax.grid(which="minor", color="white", linewidth=1)
    ax.tick_params(which="minor", length=0)
    seen = {outcome for row in cells for outcome in row}
    ax.legend(handles=[Patch(color=COLOURS[index[o]], label=o) for o in OUTCOMES if o in seen],
              fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
    ax.set_title("Trials: task x condition, trial", fontsize=9, loc="left")
    fig.tight_layout()
    return _save(fig, path)


def _save(fig: Any, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=DPI)
    plt.close(fig)
    tmp.replace(path)  # a reader never sees half a picture
    return path


def markdown(pictures: list[tuple[str, Path]], relative_to: Path) -> list[str]:
    """The pictures section of a report: image links relative to the report's directory."""
    found = [(caption, p) for caption, p in pictures if p.is_file()]
    if not found:
        return []
    lines = ["## Pictures", ""]
    for caption, picture in found:
        lines += [f"![{caption}]({picture.relative_to(relative_to).as_posix()})", ""]
    return lines[:-1]
