"""The Dagster definitions load and their assets really materialize."""

from __future__ import annotations

import dagster as dg

from mcp_evals_pipeline.definitions import defs
from mcp_evals_pipeline.defs.partitions import catalog_trial_keys
from mcp_evals_pipeline.defs.tasks.assets import task_catalog
from mcp_evals_pipeline.tasks.catalog import discover_tasks


def test_definitions_load() -> None:
    dg.Definitions.validate_loadable(defs)


def test_task_catalog_materializes_with_prompt_hashes() -> None:
    with dg.instance_for_test() as instance:
        result = dg.materialize([task_catalog], instance=instance)
        assert result.success
        metadata = result.asset_materializations_for_node("task_catalog")[0].metadata
    tasks, _ = discover_tasks()
    assert metadata["task_count"].value == len(tasks)
    assert metadata["trial_partitions"].value == len(catalog_trial_keys(tasks))
    assert metadata["prompt_hashes"].value == {t.id: t.prompt_hash for t in tasks}
