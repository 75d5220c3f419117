"""A Dagster run deleted while it runs (anyone who reaches the webserver's GraphQL can) fails that run in the batch's
eyes, with the reason; the batch waiting for it neither crashes nor waits forever."""

import threading

import dagster as dg
from dagster._core.utils import make_new_run_id

from mcp_evals_pipeline.launched_runs import wait_for_runs
from mcp_evals_pipeline.pipeline import trial_outcome


def test_a_run_deleted_while_it_ran_counts_as_failed() -> None:
    with dg.instance_for_test() as instance:
        gone = instance.add_run(dg.DagsterRun(job_name="trials_job", run_id=make_new_run_id(),
                                              status=dg.DagsterRunStatus.STARTED))
        stays = instance.add_run(dg.DagsterRun(job_name="trials_job", run_id=make_new_run_id(),
                                               status=dg.DagsterRunStatus.STARTED))
        ended: dict[str, dg.DagsterRun | None] = {}
        threading.Timer(0.5, instance.delete_run, [gone.run_id]).start()
        wait_for_runs(instance, [gone.run_id, stays.run_id], ended.__setitem__, print, until_one=True)
        assert list(ended) == [gone.run_id] and ended[gone.run_id] is None  # the other one still runs
        outcome = trial_outcome(instance, gone.run_id, None)
        assert not outcome.success and "deleted while it ran" in outcome.error
        instance.report_run_failed(stays, "a step failed")
        wait_for_runs(instance, [stays.run_id], ended.__setitem__, print)
        failed = ended[stays.run_id]
        assert failed is not None and failed.status == dg.DagsterRunStatus.FAILURE
        assert not trial_outcome(instance, stays.run_id, failed).success
