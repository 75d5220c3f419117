"""The SQL models of dbt_like_sql/ as assets: one asset per file, lineage from its {{ ref('...') }}s."""


from collections.abc import Iterator

import dagster as dg

from mcp_evals_pipeline.defs.resources import EvalStore
from mcp_evals_pipeline.runs import index_missing_runs, index_pending_trials
from mcp_evals_pipeline.sql_models import materialize_models, sql_model_specs

MODELS = sql_model_specs()
OWNER = "team:evals"  # who answers for a figure: the eval team owns every model


def _headline(con, name: str) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """Numbers the UI plots over time: the newest batch's headline, with its counts."""
    if name != "pass_rate":
        return {}
    row = con.execute(
        "SELECT run_id, passed, valid_scored, invalid, pass_rate, wilson_low, wilson_high FROM pass_rate "
        "WHERE condition = '*' ORDER BY batch_date DESC NULLS LAST, run_id DESC LIMIT 1"
    ).fetchone()
    if row is None:
        return {}
    run_id, passed, valid, invalid, rate, low, high = row
    return {
        "latest_run": run_id,
        "latest_pass_rate": dg.MetadataValue.float(float(rate)) if rate is not None else dg.MetadataValue.null(),
        "latest_passed": int(passed),
        "latest_valid_scored": int(valid),
        "latest_invalid": int(invalid),
        "latest_wilson_95": f"[{low:.3f}, {high:.3f}]" if low is not None else "-",
    }


@dg.multi_asset(
    specs=[
        dg.AssetSpec(
            key=m.name,
            deps=[*m.deps, *(["trial"] if m.depends_on_source else [])],
            group_name="models",
            kinds={"duckdb", "sql"},
            description=m.description or f"dbt_like_sql/{m.name}.sql",
            owners=[OWNER],
        )
        for m in MODELS
    ],
    can_subset=True,
    name="sql_models",
)
def sql_models(context: dg.AssetExecutionContext, eval_store: EvalStore) -> Iterator[dg.MaterializeResult]:
    selected = [key.path[-1] for key in context.selected_asset_keys]
    store = eval_store.store()
    # The one writer of the rows whose trials left them to it (store.ROW_WRITER_ENV=indexer: run workers on many
    # hosts), and of any a trial's run could not write: before anything reads the trials table.
    trials, unindexed = index_pending_trials(eval_store.runs(), store)
    if trials:
        context.log.info(f"indexed the rows of {trials} trial(s) from their trial.json")
    for problem in unindexed:
        context.log.warning(f"trial not indexed: {problem}")
    # Runs whose trials came from the UI or a backfill get their run.json and `runs` row here, not only when a
    # scorecard is written: every table is current once the models are.
    indexed, broken = index_missing_runs(eval_store.runs(), store)
    for run_id in indexed:
        context.log.info(f"indexed run {run_id}")
    for problem in broken:  # reported by the scorecard too; the figures are built all the same
        context.log.warning(f"run not indexed: {problem}")
    with store.connect() as con:
        rows = materialize_models(con, names=selected)
        for name in [m.name for m in MODELS if m.name in selected]:
            yield dg.MaterializeResult(asset_key=name, metadata={
                "dagster/row_count": rows.get(name, 0),
                "dagster/column_schema": _schema(con, name),
                **_headline(con, name),
            })


def _schema(con, name: str) -> dg.TableSchema:  # type: ignore[no-untyped-def]
    """The model's columns and DuckDB types, as the UI shows a table's schema."""
    return dg.TableSchema(columns=[dg.TableColumn(str(column), str(kind))
                                   for column, kind, *_ in con.execute(f'DESCRIBE "{name}"').fetchall()])
