"""The task catalog: every task and its promptHash, the root of the lineage graph."""

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
    return dg.MaterializeResult(
        metadata={
            "task_count": len(tasks),
            "trial_partitions": len(keys),
            "grader_version": GRADER_VERSION,
            "prompt_hashes": dg.MetadataValue.json({t.id: t.prompt_hash for t in tasks}),
        }
    )


