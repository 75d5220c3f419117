"""Dagster definitions: `workspace.yaml` and `dagster dev` load this module. It only merges the domain modules
of the Dagster layer (mcp_evals_pipeline/defs/)."""

import dagster as dg

from mcp_evals_pipeline.defs.assets.reports import batch_scorecard, weekly_synthesis
from mcp_evals_pipeline.defs.assets.sql_models import sql_models
from mcp_evals_pipeline.defs.assets.tasks import task_catalog
from mcp_evals_pipeline.defs.assets.trials import trial
from mcp_evals_pipeline.defs.checks import (
    pass_rate_above_floor,
    trial_rows_are_current,
    usage_within_floor_and_ceiling,
)
from mcp_evals_pipeline.defs.jobs import catalog_job, reports_job, synthesis_job, trials_job
from mcp_evals_pipeline.defs.resources import EvalStore
from mcp_evals_pipeline.defs.schedules import (
    baseline_schedule,
    batch_reports_schedule,
    synthesis_schedule,
    usage_schedule,
)

defs = dg.Definitions(
    assets=[task_catalog, trial, sql_models, batch_scorecard, weekly_synthesis],
    asset_checks=[trial_rows_are_current, pass_rate_above_floor, usage_within_floor_and_ceiling],
    jobs=[catalog_job, trials_job, reports_job, synthesis_job],
    schedules=[baseline_schedule, batch_reports_schedule, synthesis_schedule, usage_schedule],
    resources={"eval_store": EvalStore()},
)
