"""Imported batches in the UI: the scorecard partition of each imported batch date is materialized at import.

The earlier harness's runs are not re-run here (their trials are imported rows, their report.md is copied with
them), so no Dagster run ever materializes their dates' scorecards, and each such partition looked missing forever
beside the runs it holds. `record_imported_scorecards` records, for each imported batch date that is a batch date
partition, a materialization of `batch_scorecard` without a run (as `report_runless_asset_event` does for any
external write), carrying the same figures a pipeline batch's scorecard carries: the rates with their intervals and
each report's body. A partition already materialized (a pipeline batch of that date) is left as it is. Batch days
on which nothing ran, imported or not, stay missing: that is what they are."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from mcp_evals_pipeline.defs.partitions import batch_date_partitions
from mcp_evals_pipeline.defs.reports.rates import rates_table, suite_rates
from mcp_evals_pipeline.legacy_import import IMPORTED_REPORT
from mcp_evals_pipeline.store import TrialStore

SCORECARD = dg.AssetKey("batch_scorecard")


def record_imported_scorecards(instance: dg.DagsterInstance, store: TrialStore, runs_root: Path,
                               run_ids: list[str]) -> list[str]:
    """Materialize the scorecard partitions of the imported runs' batch dates (those not yet materialized); the
    dates recorded."""
    if not run_ids:
        return []
    with store.connect() as con:
        found = con.execute("SELECT strftime(batch_date, '%Y-%m-%d'), list(DISTINCT run_id ORDER BY run_id) "
                            "FROM trials WHERE source = 'import' AND run_id IN (SELECT unnest(?)) "
                            "AND batch_date IS NOT NULL GROUP BY ALL ORDER BY ALL", [run_ids]).fetchall()
        dates = {str(date): list(runs) for date, runs in found if batch_date_partitions.has_partition_key(str(date))}
        rates = {date: suite_rates(con, date, source="import") for date in dates}
    recorded = []
    for date, runs in dates.items():
        if instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=SCORECARD, asset_partitions=[date]),
                                           limit=1).records:
            continue
        # our report.md if one was written for the run (`mcp-evals report --write`), else the harness's own
        reports = [next((p for p in (runs_root / run / n for n in ("report.md", IMPORTED_REPORT)) if p.is_file()),
                        None) for run in runs]
        instance.report_runless_asset_event(dg.AssetMaterialization(SCORECARD, partition=date, metadata={
            "source": "import",
            "pass_rates": rates_table(rates[date]),
            "runs": len(runs),
            **{f"report: {p.parent.name}": dg.MetadataValue.md(p.read_text(errors="replace")) for p in reports if p},
        }))
        recorded.append(date)
    return recorded
