"""The task catalog: every task and its promptHash, the root of the lineage graph."""

import hashlib
import json

import dagster as dg

from mcp_evals_pipeline.defs.partitions import TRIALS_PER_CELL, catalog_trial_keys, register_trial_keys
from mcp_evals_pipeline.tasks.catalog import discover_tasks, read_lock
from mcp_evals_pipeline.versions import GRADER_VERSION


@dg.asset(
    group_name="tasks",
    kinds={"python"},
    description="Every task under tasks/ with its promptHash; fails if a task does not load or was edited in place. "
                "Registers the trial partitions the catalog defines: each task x each condition it can run x "
                f"t1..t{TRIALS_PER_CELL}.",
)
def task_catalog(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    tasks, errors = discover_tasks()
    if errors:
        raise dg.Failure(description="tasks failed to load", metadata={"errors": "\n".join(map(str, errors))})
    lock = read_lock()
    edited = [t.id for t in tasks if t.id in lock and lock[t.id] != t.prompt_hash]
    if edited:
        raise dg.Failure(description=f"edited in place (a changed prompt or contract is a new task): {edited}")
    keys = catalog_trial_keys(tasks)
    added = register_trial_keys(context.instance, keys)
    context.log.info(f"{len(tasks)} tasks, {len(keys)} trial partitions ({len(added)} new)")
    hashes = {t.id: t.prompt_hash for t in tasks}
    return dg.MaterializeResult(
        # What the trials read of the catalog, as its data version: an unchanged catalog keeps its version, so
        # materializing it again (every batch does) leaves the trials synced; without one, Dagster versions each
        # materialization by its event and marks every trial materialized before it "Unsynced".
        data_version=catalog_version(hashes),
        metadata={
            "task_count": len(tasks),
            "trial_partitions": len(keys),
            "grader_version": GRADER_VERSION,
            "prompt_hashes": dg.MetadataValue.json(hashes),
        }
    )


def catalog_version(prompt_hashes: dict[str, str]) -> dg.DataVersion:
    """The tasks' ids and promptHashes and the grader version, hashed: what a trial's result depends on."""
    body = json.dumps({"grader": GRADER_VERSION, "tasks": prompt_hashes}, sort_keys=True)
    return dg.DataVersion(hashlib.sha256(body.encode()).hexdigest()[:16])


