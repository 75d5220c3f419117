"""Every SDK release watched: one sensor per build suite polls its SDK's registry (the suite's `sdkPackage` and
`registry` in tasks/suites.json, through sdk_registry.py) and, on a version it has not seen, launches the suite's
baseline batch (its baseline tasks x noskill+blank x 3, agent codex, as the baseline schedule) under a batch id that
names the release, e.g. `2026-12-02-mcp-use-2.7.0`. The trials record the registry's latest on their rows and the
run manifest as every batch does.

Stopped by default like the schedules (a batch runs a paid agent). The poll interval is MCP_EVALS_RELEASE_POLL_S
(seconds, read when the definitions load; default an hour); the registry is the one sdk_registry.py asks
(MCP_EVALS_NPM_REGISTRY, MCP_EVALS_PYPI_URL). A registry that is down, or lookups turned off, is a skip with its
reason, never a crash; the cursor keeps the versions seen, and each run key names the release, so one release
launches one batch. A sensor's first tick has seen nothing: turning it on launches the current release's batch.
The trials go in the batch calendar's current date partition beside that date's scheduled batch; the batch id
(hence the slot and run id) keeps them apart."""

import json
import os

import dagster as dg

from mcp_evals_pipeline.conditions import BASELINE
from mcp_evals_pipeline.defs.partitions import batch_date_partitions, register_trial_keys
from mcp_evals_pipeline.defs.trials.jobs import trials_job
from mcp_evals_pipeline.defs.trials.schedules import BASELINE_AGENT, BASELINE_TRIALS, _trial_requests
from mcp_evals_pipeline.ids import check_id
from mcp_evals_pipeline.paths import tasks_dir
from mcp_evals_pipeline.sdk_registry import fetch_latest, remember_latest
from mcp_evals_pipeline.tasks.suites import Suite, get_suite, load_suites

POLL_ENV = "MCP_EVALS_RELEASE_POLL_S"
DEFAULT_POLL_S = 3600
OFF_ENV = "MCP_EVALS_SDK_REGISTRY"  # sdk_registry.py's switch: "off" turns every registry lookup off


def poll_interval_s() -> int:
    raw = os.environ.get(POLL_ENV, "")
    try:
        return max(30, int(raw)) if raw else DEFAULT_POLL_S
    except ValueError as exc:
        raise ValueError(f"{POLL_ENV}={raw!r}: the poll interval must be a whole number of seconds") from exc


def is_build_suite(suite: Suite) -> bool:
    """A suite of build tasks (an SDK under test), read from its baseline tasks' task.json `kind` (absent: build)
    without loading the catalog, which would cost every definitions load seconds."""
    for task_id in suite.baseline_tasks:
        path = tasks_dir() / task_id / "task.json"
        if path.exists() and json.loads(path.read_text()).get("kind", "build") != "build":
            return False
    return True


def release_batch_id(batch_date: str, suite_name: str, version: str) -> str:
    return check_id(f"{batch_date}-{suite_name}-{version}", "release batch id")


def release_run_requests(suite_name: str, version: str, batch_date: str) -> list[dg.RunRequest]:
    """The suite's baseline batch on one release: its baseline tasks x noskill+blank x 3, agent codex."""
    suite = get_suite(suite_name)
    batch_id = release_batch_id(batch_date, suite_name, version)
    cells = [(task_id, BASELINE) for task_id in suite.baseline_tasks]
    return _trial_requests(f"release-{suite_name}-{version}", batch_date, cells, BASELINE_AGENT, BASELINE_TRIALS,
                           {"mcp-evals/suite": suite_name, "mcp-evals/sdk-release": f"{suite.sdk_package}@{version}"},
                           batch_id=batch_id)


def _evaluate(context: dg.SensorEvaluationContext, suite_name: str) -> dg.SensorResult | dg.SkipReason:
    suite = get_suite(suite_name)
    if os.environ.get(OFF_ENV, "").lower() in ("off", "0", "false"):
        return dg.SkipReason(f"registry lookups are off ({OFF_ENV}={os.environ[OFF_ENV]})")
    version, why = fetch_latest(suite.sdk_package, suite.registry)
    if version is None:
        return dg.SkipReason(f"{suite.registry} {suite.sdk_package}: latest version unknown: {why}")
    seen = json.loads(context.cursor) if context.cursor else []
    if version in seen:
        return dg.SkipReason(f"{suite.sdk_package} {version}: already seen, no new release")
    # the batch calendar's newest date (end_offset=1: the window now running), the partition the trials go in
    batch_date = batch_date_partitions.get_last_partition_key()
    if batch_date is None:
        return dg.SkipReason("no batch date partition yet")
    try:
        requests = release_run_requests(suite_name, version, batch_date)
    except ValueError as exc:  # a version no batch id can carry: said, never a crash
        return dg.SkipReason(f"{suite.sdk_package} {version}: {exc}")
    remember_latest(suite.sdk_package, suite.registry, version)  # the batch's rows and manifest name this release
    register_trial_keys(context.instance, [r.partition_key.keys_by_dimension["trial"] for r in requests
                                           if isinstance(r.partition_key, dg.MultiPartitionKey)])
    context.log.info(f"{suite.sdk_package} {version} is new: batch {requests[0].tags['mcp-evals/batch']}, "
                     f"{len(requests)} trial runs")
    return dg.SensorResult(run_requests=requests, cursor=json.dumps([*seen, version]))


def release_sensor(suite_name: str) -> dg.SensorDefinition:
    suite = get_suite(suite_name)

    @dg.sensor(name=f"{suite_name.replace('-', '_')}_release_sensor", job=trials_job,
               minimum_interval_seconds=poll_interval_s(), default_status=dg.DefaultSensorStatus.STOPPED,
               description=f"A new {suite.sdk_package} release on {suite.registry}: the {suite_name} suite's "
                           "baseline batch on it, under a batch id naming the release.")
    def _sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult | dg.SkipReason:
        return _evaluate(context, suite_name)

    return _sensor


# Module level, so Dagster's loader finds them: one per build suite of tasks/suites.json.
RELEASE_SENSORS = [release_sensor(name) for name, suite in load_suites().items() if is_build_suite(suite)]
