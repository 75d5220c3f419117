"""The trial asset's check: the store agrees with what Dagster materialized."""

import dagster as dg

from mcp_evals_pipeline.defs.resources import EvalStore
from mcp_evals_pipeline.reporting.markdown import md_text


def _latest_per_partition(instance: dg.DagsterInstance, key: dg.AssetKey) -> dict[str, dict[str, object]]:
    """Metadata of the newest materialization of every partition (pages through the event log)."""
    latest: dict[str, dict[str, object]] = {}
    cursor = None
    while True:
        page = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=key), limit=1000, cursor=cursor)
        for record in page.records:
            mat = record.asset_materialization
            if mat is not None and mat.partition and mat.partition not in latest:
                latest[mat.partition] = {k: v.value for k, v in mat.metadata.items()}
        if not page.has_more:
            return latest
        cursor = page.cursor


@dg.asset_check(asset="trial", description="Every materialized trial partition has exactly one current row in "
                                           "DuckDB, and it is the attempt its newest materialization wrote.")
def trial_rows_are_current(context: dg.AssetCheckExecutionContext, eval_store: EvalStore) -> dg.AssetCheckResult:
    latest = _latest_per_partition(context.instance, dg.AssetKey("trial"))
    rows = eval_store.store().query("SELECT slot, attempt FROM trial_attempts WHERE is_current")
    current: dict[str, list[int]] = {}
    for row in rows:
        current.setdefault(str(row["slot"]), []).append(int(row["attempt"]))  # type: ignore[arg-type]
    problems = []
    for partition, meta in sorted(latest.items()):
        attempts = current.get(str(meta.get("slot")), [])
        if attempts != [meta.get("attempt")]:
            problems.append(f"{partition}: current attempts {attempts}, materialized attempt {meta.get('attempt')}")
    return dg.AssetCheckResult(
        passed=not problems,
        metadata={"partitions_checked": len(latest), "problems": dg.MetadataValue.md(
            "\n".join(f"- {md_text(p)}" for p in problems[:50]) or "none")},
    )
