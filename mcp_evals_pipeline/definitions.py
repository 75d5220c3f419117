"""Dagster definitions: `dg dev`, `dg check defs`, `dagster ... -m mcp_evals_pipeline.definitions` and deploy/
load this module. Everything in it comes from the defs folder (mcp_evals_pipeline/defs/), read by Dagster's own
loader."""

from pathlib import Path

import dagster as dg

defs = dg.load_from_defs_folder(path_within_project=Path(__file__).parent)
