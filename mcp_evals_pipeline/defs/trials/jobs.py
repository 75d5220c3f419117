"""The trials' job: one run per trial partition (the CLI, the schedules and backfills launch it)."""

import dagster as dg

# A trial run materializes its trial only: the checks of the trial asset scan every partition's row, once per batch
# (in reports_job) rather than once per trial.
trials_job = dg.define_asset_job("trials_job", selection=dg.AssetSelection.assets("trial").without_checks(),
                                 description="Materialize trial partitions (one run per trial).")
