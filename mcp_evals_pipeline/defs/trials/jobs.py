"""The trials' job: one run per trial partition (the CLI, the schedules and backfills launch it)."""

import dagster as dg

# A trial run materializes its trial only: the checks of the trial asset scan every partition's row, once per batch
# (trial_checks_job) rather than once per trial.
trials_job = dg.define_asset_job("trials_job", selection=dg.AssetSelection.assets("trial").without_checks(),
                                 description="Materialize trial partitions (one run per trial).")

# Unpartitioned on purpose: in a run partitioned by batch date, Dagster looks for the trial materialization the check
# judges under that partition key, which no trial partition has; the UI then dates the check by its start (to the
# second) and shows "Not evaluated" when the last trial landed in the same second. Unpartitioned, the check is tied
# to the trial asset's latest materialization.
trial_checks_job = dg.define_asset_job(
    "trial_checks_job", selection=dg.AssetSelection.checks_for_assets("trial"),
    description="Check that every materialized trial partition has its current row (after a batch's trials).")
