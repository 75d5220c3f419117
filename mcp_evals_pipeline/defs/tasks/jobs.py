"""The catalog's job: every batch starts with it (the CLI's, the UI's)."""

import dagster as dg

catalog_job = dg.define_asset_job("catalog_job", selection=["task_catalog"],
                                  description="The task catalog, the lineage root: every batch starts with it.")
