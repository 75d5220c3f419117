"""The trials' job: one run per trial partition (the CLI, the schedules and backfills launch it)."""

import dagster as dg

from mcp_evals_pipeline.defs.trials.outcome import OUTCOME_CHECK
from mcp_evals_pipeline.run_executor import IN_PROCESS

# A trial run materializes its trial and its own partition's outcome check only: the other checks of the trial asset
# scan every partition's row, once per batch (trial_checks_job) rather than once per trial.
trials_job = dg.define_asset_job(
    "trials_job", executor_def=IN_PROCESS, selection=dg.AssetSelection.assets("trial").without_checks()
    | dg.AssetSelection.checks(dg.AssetCheckKey(dg.AssetKey("trial"), OUTCOME_CHECK)),
    description="Materialize trial partitions (one run per trial), each with its trial_outcome check.")

# Unpartitioned on purpose: in a run partitioned by batch date, Dagster looks for the trial materialization the check
# judges under that partition key, which no trial partition has; the UI then dates the check by its start (to the
# second) and shows "Not evaluated" when the last trial landed in the same second. Unpartitioned, the check is tied
# to the trial asset's latest materialization.
trial_checks_job = dg.define_asset_job(
    "trial_checks_job", executor_def=IN_PROCESS, selection=dg.AssetSelection.checks_for_assets("trial")
    - dg.AssetSelection.checks(dg.AssetCheckKey(dg.AssetKey("trial"), OUTCOME_CHECK)),
    description="Check that every materialized trial partition has its current row (after a batch's trials).")
