"""What every run worker does before its run starts, done once in the code server's forkserver (code_server.py),
from which each run worker is forked: the definitions and what trials use imported, and the modules of the
instance's storage classes imported (creating the first instance in a process otherwise costs ~0.6 s of imports).
Nothing here opens a file for writing, a connection or a thread: a forked child would inherit them."""

import importlib
import os

from mcp_evals_pipeline.definitions import defs

# a trial's own modules (a build trial's grading, a usage trial's marking and its recording proxy), and the Dagster
# modules a run worker imports to build its instance and watch its events
TRIAL_MODULES = ("mcp_evals_pipeline.trials", "mcp_evals_pipeline.grader.functional",
                 "mcp_evals_pipeline.usage.marker", "mcp_evals_pipeline.usage.proxy",
                 "dagster._core.instance.factory", "dagster._core.storage.event_log.polling_event_watcher")


def _import_instance_classes() -> None:
    """The modules the instance at DAGSTER_HOME loads its storages, launcher and coordinator from."""
    from dagster._core.instance.ref import InstanceRef

    home = os.environ.get("DAGSTER_HOME")
    if not home or not os.path.isdir(home):
        return
    ref = InstanceRef.from_dir(home)
    for data in (ref.local_artifact_storage_data, ref.run_storage_data, ref.event_storage_data,
                 ref.compute_logs_data, ref.schedule_storage_data, ref.scheduler_data, ref.run_coordinator_data,
                 ref.run_launcher_data, ref.storage_data):
        if data is not None:
            getattr(importlib.import_module(data.module_name), data.class_name)


for module in TRIAL_MODULES:
    importlib.import_module(module)
defs.get_repository_def()  # the asset graph and jobs, built once
_import_instance_classes()
