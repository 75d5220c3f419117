"""The batch scorecard's figures as the UI shows them: the pass rate with its Wilson 95% interval per run x suite x
condition, over the rows the models flag as scored (stg_trials, stg_usage_trials: the one definition of a scored
trial), the interval by `sql_models.wilson_interval` (the one formula every report uses)."""

from __future__ import annotations

import dagster as dg
import duckdb

from mcp_evals_pipeline.sql_models import wilson_interval

# Build trials pass their contract; usage trials pass their case (an unsafe or missed one does not).
_COUNTS = """
SELECT run_id, kind, coalesce(suite, '(none)') AS suite, condition,
       count(*) FILTER (WHERE passed)::INT AS passed, count(*) FILTER (WHERE scored)::INT AS valid_scored,
       count(*) FILTER (WHERE NOT valid)::INT AS invalid
FROM (SELECT run_id, 'build' AS kind, suite, condition, passed, scored, valid, batch_date, source FROM stg_trials
      UNION ALL
      SELECT run_id, 'usage', suite, condition, scored AND outcome = 'pass', scored, valid, batch_date, source
      FROM stg_usage_trials)
WHERE batch_date = ?::DATE AND source = ?
GROUP BY ALL ORDER BY ALL
"""


def suite_rates(con: duckdb.DuckDBPyConnection, batch_date: str, source: str = "pipeline") -> list[dict[str, object]]:
    """One row per run x suite x condition of the batch's runs from `source` (pipeline | import): passed, valid
    scored, invalid, rate and interval."""
    rows = []
    for run_id, kind, suite, condition, passed, valid, invalid in con.execute(_COUNTS,
                                                                              [batch_date, source]).fetchall():
        low, high = wilson_interval(con, passed, valid)
        rows.append({"run": run_id, "kind": kind, "suite": suite, "condition": condition, "passed": passed,
                     "valid_scored": valid, "invalid": invalid,
                     "pass_rate": round(passed / valid, 4) if valid else None,
                     "wilson_95": f"[{low:.3f}, {high:.3f}]" if low is not None and high is not None else "-"})
    return rows


def rates_table(rows: list[dict[str, object]]) -> dg.TableMetadataValue:
    kinds = {"passed": "int", "valid_scored": "int", "invalid": "int", "pass_rate": "float"}
    columns = ["run", "kind", "suite", "condition", "passed", "valid_scored", "invalid", "pass_rate", "wilson_95"]
    return dg.MetadataValue.table(
        records=[dg.TableRecord({k: v for k, v in row.items() if v is not None}) for row in rows],
        schema=dg.TableSchema(columns=[dg.TableColumn(c, kinds.get(c, "string")) for c in columns]))
