"""Jobs the schedules and the CLI launch."""


import dagster as dg

from mcp_evals_pipeline.defs.assets.sql_models import MODELS

trials_job = dg.define_asset_job("trials_job", selection=["trial"],
                                 description="Materialize trial partitions (one run per trial).")
reports_job = dg.define_asset_job(
    "reports_job", selection=[*(m.name for m in MODELS), "batch_scorecard"],
    description="Rebuild the SQL models, then the batch scorecard of one batch date.",
)
synthesis_job = dg.define_asset_job("synthesis_job", selection=["weekly_synthesis"])
