"""Trial partitions: batch_date x "<task>--<condition>--t<N>" (Dagster multi-partitions have two dimensions)."""


import dagster as dg

from mcp_evals_pipeline.conditions import CONDITIONS, Condition
from mcp_evals_pipeline.kinds import kind_of
from mcp_evals_pipeline.tasks.catalog import discover_tasks
from mcp_evals_pipeline.trials import MAX_TRIALS, trial_key

BATCH_CRON = "0 14 * * 1,3,5"  # Mon/Wed/Fri 14:00 UTC
FIRST_BATCH = "2026-08-03"  # the earlier harness's first batch: imported runs line up with ours

# end_offset=1: without it a Monday tick would target the previous Friday's window.
batch_date_partitions = dg.TimeWindowPartitionsDefinition(
    cron_schedule=BATCH_CRON, fmt="%Y-%m-%d", start=FIRST_BATCH, timezone="UTC", end_offset=1
)


def trial_keys(max_trials: int = MAX_TRIALS) -> list[str]:
    tasks, _ = discover_tasks()  # a broken task has no partitions; verify-tasks reports it
    keys = []
    for t in tasks:
        try:
            kind = kind_of(t.kind)
            keys += [trial_key(t.id, c, n) for c in CONDITIONS if kind.supports(Condition.parse(c))
                     for n in range(1, max_trials + 1)]
        except ValueError:  # a task directory whose name is no plain id: no partitions (eval refuses it too)
            continue
    return keys


trial_key_partitions = dg.StaticPartitionsDefinition(trial_keys())

trial_partitions = dg.MultiPartitionsDefinition({"batch_date": batch_date_partitions, "trial": trial_key_partitions})


def multi_key(batch_date: str, key: str) -> dg.MultiPartitionKey:
    return dg.MultiPartitionKey({"batch_date": batch_date, "trial": key})
