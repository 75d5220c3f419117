"""Jobs the schedules and the CLI launch."""


import dagster as dg

from mcp_evals_pipeline.defs.assets.sql_models import MODELS

catalog_job = dg.define_asset_job("catalog_job", selection=["task_catalog"],
                                  description="The task catalog, the lineage root: every batch starts with it.")
# A trial run materializes its trial only: the checks of the trial asset scan every partition's row, once per batch
# (in reports_job) rather than once per trial.
trials_job = dg.define_asset_job("trials_job", selection=dg.AssetSelection.assets("trial").without_checks(),
                                 description="Materialize trial partitions (one run per trial).")
reports_job = dg.define_asset_job(
    "reports_job",
    selection=dg.AssetSelection.assets(*(m.name for m in MODELS), "batch_scorecard")
    | dg.AssetSelection.checks_for_assets("trial"),
    description="Rebuild the SQL models (with their checks) and the batch scorecard of one batch date, and check "
                "that every trial partition has its current row.",
)
synthesis_job = dg.define_asset_job("synthesis_job", selection=["weekly_synthesis"])
