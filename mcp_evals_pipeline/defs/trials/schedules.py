"""The Mon/Wed/Fri baseline and the weekly usage batch (their reports: defs/reports/schedules.py).

Stopped by default: the baseline and the usage batch run the codex agent and need OPENAI_API_KEY; turn them on in
the UI."""



import dagster as dg

from mcp_evals_pipeline.batch_calendar import BATCH_CRON, TIMEZONE, USAGE_CRON
from mcp_evals_pipeline.conditions import BASELINE, USAGE_CONDITIONS, Condition
from mcp_evals_pipeline.defs.partitions import TRIALS_PER_CELL, multi_key, register_trial_keys, tick_date
from mcp_evals_pipeline.defs.trials.jobs import trials_job
from mcp_evals_pipeline.kinds import kind_of
from mcp_evals_pipeline.tasks.catalog import discover_tasks
from mcp_evals_pipeline.tasks.suites import get_suite
from mcp_evals_pipeline.trials import trial_key

# The spec's baseline: Codex on the nine baseline tasks of the mcp-use suite, noskill+blank, 3 trials = 27 runs.
BASELINE_SUITE = "mcp-use"
BASELINE_AGENT = "codex"
BASELINE_TRIALS = TRIALS_PER_CELL


def _trial_requests(experiment: str, batch_date: str, cells: list[tuple[str, str]], agent: str, trials: int,
                    tags: dict[str, str] | None = None, batch_id: str | None = None) -> list[dg.RunRequest]:
    """One run per trial partition: every (task, condition) cell x `trials`, with `agent` (the judge on); the
    batch id is the batch date unless one is given (a release batch names its release)."""
    config = {"agent": agent, "skip_judge": False, **({"batch_id": batch_id} if batch_id else {})}
    return [
        dg.RunRequest(
            run_key=f"{experiment}-{batch_date}-{trial_key(task_id, condition, n)}",
            partition_key=multi_key(batch_date, trial_key(task_id, condition, n)),
            run_config={"ops": {"trial": {"config": config}}},
            tags={"mcp-evals/batch": batch_id or batch_date, "mcp-evals/experiment": experiment, **(tags or {})},
        )
        for task_id, condition in cells
        for n in range(1, trials + 1)
    ]


def baseline_run_requests(batch_date: str) -> list[dg.RunRequest]:
    """The baseline suite's baseline tasks x noskill+blank x 3 trials, agent codex: one run per trial partition."""
    cells = [(task_id, BASELINE) for task_id in get_suite(BASELINE_SUITE).baseline_tasks]
    return _trial_requests("baseline", batch_date, cells, BASELINE_AGENT, BASELINE_TRIALS,
                           {"mcp-evals/suite": BASELINE_SUITE})


# The usage evals' own batch, weekly (a Wednesday batch date): every usage case (tier full) x every usage condition
# it can have x 3, so each week has its bare row and the one-change deltas beside it (seed 004: "compared to what?").
USAGE_AGENT = "codex"
USAGE_TRIALS = TRIALS_PER_CELL


def usage_run_requests(batch_date: str) -> list[dg.RunRequest]:
    """Every usage case of tier full (all of them) x bare, instructions and docs (where its suite has a docs pack)
    x 3 trials, agent codex."""
    cells = []
    for task in discover_tasks()[0]:
        if task.kind == "usage":
            kind = kind_of(task.kind)
            cells += [(task.id, c) for c in USAGE_CONDITIONS
                      if kind.condition_problem(task, Condition.parse(c)) is None]
    return _trial_requests("usage-full", batch_date, cells, USAGE_AGENT, USAGE_TRIALS)


@dg.schedule(job=trials_job, cron_schedule=BATCH_CRON, execution_timezone=TIMEZONE,
             default_status=dg.DefaultScheduleStatus.STOPPED,
             description="Baseline batch: the mcp-use suite's nine baseline tasks x noskill+blank x 3 trials, "
                         "agent codex (27 runs).")
def baseline_schedule(context: dg.ScheduleEvaluationContext) -> list[dg.RunRequest]:
    return _registered(context, baseline_run_requests(tick_date(context)))


@dg.schedule(job=trials_job, cron_schedule=USAGE_CRON, execution_timezone=TIMEZONE,
             default_status=dg.DefaultScheduleStatus.STOPPED,
             description="Usage batch (weekly, Wednesdays): every usage case (tier full) x bare, instructions "
                         "and docs x 3 trials, agent codex.")
def usage_schedule(context: dg.ScheduleEvaluationContext) -> list[dg.RunRequest]:
    return _registered(context, usage_run_requests(tick_date(context)))


def _registered(context: dg.ScheduleEvaluationContext, requests: list[dg.RunRequest]) -> list[dg.RunRequest]:
    """A run can only target a registered trial partition: the requests' keys are added first (a schedule has no
    catalog run before it)."""
    keys = [r.partition_key.keys_by_dimension["trial"] for r in requests
            if isinstance(r.partition_key, dg.MultiPartitionKey)]
    register_trial_keys(context.instance, keys)
    return requests
