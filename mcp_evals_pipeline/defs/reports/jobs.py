"""The reports' jobs: a batch's models, checks and scorecard; the weekly synthesis."""

import dagster as dg

from mcp_evals_pipeline.defs.models.assets import MODELS
from mcp_evals_pipeline.run_executor import IN_PROCESS
from mcp_evals_pipeline.store import WRITER_TAG

reports_job = dg.define_asset_job(
    "reports_job", executor_def=IN_PROCESS,
    selection=dg.AssetSelection.assets(*(m.name for m in MODELS), "batch_scorecard"),
    description="Rebuild the SQL models (with their checks) and the batch scorecard of one batch date.",
    tags={WRITER_TAG: "true"},
)
synthesis_job = dg.define_asset_job("synthesis_job", selection=["weekly_synthesis", "findings"],
                                    tags={WRITER_TAG: "true"})
