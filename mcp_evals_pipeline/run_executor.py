"""The executor of the project's jobs: each run's steps in the run worker's own process. A run is one trial (one
step) or a batch's few report steps; a subprocess per step would only add a second cold start of Python and the
definitions to every run (about 1.5 s here), whoever launches it: the CLI, the UI, a schedule or a backfill."""

import dagster as dg

IN_PROCESS = dg.in_process_executor
