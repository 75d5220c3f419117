"""The batch's models and scorecard after its trials (Mon/Wed/Fri), and the Monday synthesis. Stopped by default,
like the batches they report on."""


import dagster as dg

from mcp_evals_pipeline.batch_calendar import REPORTS_CRON, SYNTHESIS_CRON, TIMEZONE, TRIAL_CHECKS_CRON
from mcp_evals_pipeline.defs.partitions import tick_date
from mcp_evals_pipeline.defs.reports.jobs import reports_job, synthesis_job
from mcp_evals_pipeline.defs.trials.jobs import trial_checks_job


@dg.schedule(job=reports_job, cron_schedule=REPORTS_CRON, execution_timezone=TIMEZONE,
             default_status=dg.DefaultScheduleStatus.STOPPED,
             description="SQL models and the scorecard of the day's batch, after its trials.")
def batch_reports_schedule(context: dg.ScheduleEvaluationContext) -> dg.RunRequest:
    return dg.RunRequest(run_key=f"reports-{tick_date(context)}", partition_key=tick_date(context))


@dg.schedule(job=trial_checks_job, cron_schedule=TRIAL_CHECKS_CRON, execution_timezone=TIMEZONE,
             default_status=dg.DefaultScheduleStatus.STOPPED,
             description="The trial asset's check after the day's batch (its own unpartitioned run).")
def trial_checks_schedule(context: dg.ScheduleEvaluationContext) -> dg.RunRequest:
    return dg.RunRequest(run_key=f"trial-checks-{tick_date(context)}")


@dg.schedule(job=synthesis_job, cron_schedule=SYNTHESIS_CRON, execution_timezone=TIMEZONE,
             default_status=dg.DefaultScheduleStatus.STOPPED,
             description="Weekly synthesis of the last 7 days (Mondays).")
def synthesis_schedule(context: dg.ScheduleEvaluationContext) -> dg.RunRequest:
    # The week that just ended: the weekly partition starting last Monday.
    start = tick_date(context, days_back=7)
    return dg.RunRequest(run_key=f"synthesis-{start}", partition_key=start)
