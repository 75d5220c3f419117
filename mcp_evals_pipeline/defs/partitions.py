"""Trial partitions: batch_date x "<task>--<condition>--t<N>" (Dagster multi-partitions have two dimensions).

The trial dimension is dynamic: it holds only the keys the catalog defines (each task under each condition its kind
can run, trials 1..3, registered by `task_catalog`) and any further trial a batch or schedule asked for (its keys are
registered before its runs launch). A static set would have to name every trial count anyone might ask for (t4, t5)
and every task ever loaded; the UI would list thousands of partitions nobody ran."""


import datetime as dt
from zoneinfo import ZoneInfo

import dagster as dg

from mcp_evals_pipeline.batch_calendar import BATCH_CRON, FIRST_BATCH, TIMEZONE
from mcp_evals_pipeline.conditions import CONDITIONS, Condition
from mcp_evals_pipeline.kinds import kind_of
from mcp_evals_pipeline.tasks.catalog import Task
from mcp_evals_pipeline.trials import trial_key

TRIALS_PER_CELL = 3  # the spec's trials per task x condition: what the catalog registers (a batch may ask more)

# end_offset=1: without it a Monday tick would target the previous Friday's window.
batch_date_partitions = dg.TimeWindowPartitionsDefinition(
    cron_schedule=BATCH_CRON, fmt="%Y-%m-%d", start=FIRST_BATCH, timezone=TIMEZONE, end_offset=1
)

trial_key_partitions = dg.DynamicPartitionsDefinition(name="trial")

trial_partitions = dg.MultiPartitionsDefinition({"batch_date": batch_date_partitions, "trial": trial_key_partitions})


def multi_key(batch_date: str, key: str) -> dg.MultiPartitionKey:
    return dg.MultiPartitionKey({"batch_date": batch_date, "trial": key})


def tick_date(context: dg.ScheduleEvaluationContext, days_back: int = 0) -> str:
    """The date (in the batch calendar's timezone) a schedule tick stands for, `days_back` days earlier."""
    when = context.scheduled_execution_time.astimezone(ZoneInfo(TIMEZONE)) - dt.timedelta(days=days_back)
    return when.strftime("%Y-%m-%d")


def catalog_trial_keys(tasks: list[Task], trials: int = TRIALS_PER_CELL) -> list[str]:
    """Every task x each condition it can run (a usage task's docs only with its suite's docs pack) x trials."""
    keys = []
    for task in tasks:
        try:
            kind = kind_of(task.kind)
            runnable = [c for c in map(Condition.parse, CONDITIONS)
                        if kind.supports(c) and kind.condition_problem(task, c) is None]
            keys += [trial_key(task.id, c.name, n) for c in runnable for n in range(1, trials + 1)]
        except ValueError:  # a task directory whose name is no plain id: no partitions (eval refuses it too)
            continue
    return keys


def register_trial_keys(instance: dg.DagsterInstance, keys: list[str]) -> list[str]:
    """Add the trial keys the instance lacks (a run can only target a registered key); the keys added. Batches
    started side by side register the same keys at once: a lost race (the key's unique index) is read again."""
    attempts = 3
    while True:
        known = set(instance.get_dynamic_partitions(trial_key_partitions.name))
        new = [k for k in dict.fromkeys(keys) if k not in known]
        if not new:
            return []
        try:
            instance.add_dynamic_partitions(trial_key_partitions.name, new)
            return new
        except Exception:  # the other writer's rows landed first (sqlalchemy IntegrityError): look again
            attempts -= 1
            if not attempts:
                raise


