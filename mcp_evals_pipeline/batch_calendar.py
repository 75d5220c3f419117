"""The batch calendar, in one place: when batches happen, when their reports and the weekly synthesis follow, and
the first batch date (the earlier harness's, so imported runs line up with ours). The partitions, the schedules, the
pipeline and the CI workflow files (.github/workflows, held to these values by tests/test_action.py) read it here."""

FIRST_BATCH = "2026-08-03"  # a Monday: the weekly synthesis partitions start here too
BATCH_DAYS = "Mon/Wed/Fri"
BATCH_CRON = "0 14 * * 1,3,5"  # the baseline batch: Mon/Wed/Fri 14:00 UTC
USAGE_CRON = "0 16 * * 3"  # the usage batch: Wednesdays, once the day's batch date has opened
TRIAL_CHECKS_CRON = "30 19 * * 1,3,5"  # the trial asset's check, after the day's trials
REPORTS_CRON = "0 20 * * 1,3,5"  # the SQL models and the scorecard of the day's batch
SYNTHESIS_CRON = "0 15 * * 1"  # the weekly synthesis of the week that ended, Mondays
TIMEZONE = "UTC"
