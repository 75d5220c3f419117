"""The catalog's job: every batch starts with it (the CLI's, the UI's)."""

import dagster as dg

from mcp_evals_pipeline.run_executor import IN_PROCESS

catalog_job = dg.define_asset_job("catalog_job", executor_def=IN_PROCESS, selection=["task_catalog"],
                                  description="The task catalog, the lineage root: every batch starts with it.")
