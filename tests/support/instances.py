"""A temporary Dagster instance a batch can submit runs to."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import dagster as dg
import yaml

from mcp_evals_pipeline.dagster_instance import COORDINATOR_YAML


@contextmanager
def batch_instance() -> Iterator[dg.DagsterInstance]:
    """dg.instance_for_test with the project's run coordinator (runs start when submitted, no daemon), as the
    project's own instance config has it."""
    with dg.instance_for_test(overrides=yaml.safe_load(COORDINATOR_YAML)) as instance:
        yield instance
