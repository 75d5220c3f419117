"""The project's code server: `dagster api grpc` whose run workers start warm.

Dagster's code server starts each run it is asked to launch (DefaultRunLauncher) in a *spawned* process: a fresh
Python that imports Dagster, the definitions and, in a trial, the grader or the MCP SDK, about 3-5 s of CPU per run
on this project's 2-core machine, paid again by every trial. Here the same server takes its run processes from a
`forkserver` that imported those modules once: each run worker is a fork of a process that has done nothing but
import (no threads, no open connections), so it starts in a fraction of a second. Everything else is Dagster's
own `dagster api grpc`, with its arguments.

    python -m mcp_evals_pipeline.code_server --socket PATH -m mcp_evals_pipeline.definitions --location-name NAME
"""

from __future__ import annotations

import multiprocessing
import sys

# What every run worker does first (warm_worker.py), done once before the forks.
PRELOAD = ["mcp_evals_pipeline.warm_worker", "dagster._grpc.impl"]


def warm_context() -> multiprocessing.context.BaseContext:
    """The forkserver context, its server started now: it imports while this process loads the definitions."""
    from multiprocessing import forkserver

    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    forkserver.ensure_running()
    return context


def main() -> None:
    from dagster._cli.api import grpc_command
    from dagster._grpc import server

    context = warm_context()
    original = server.DagsterApiServer.__init__

    def init(self: server.DagsterApiServer, *args: object, **kwargs: object) -> None:
        original(self, *args, **kwargs)  # type: ignore[arg-type]
        self._mp_ctx = context  # the one attribute Dagster's server starts run processes from (dagster 1.13)

    server.DagsterApiServer.__init__ = init  # type: ignore[method-assign]
    sys.exit(grpc_command())  # pylint: disable=no-value-for-parameter


if __name__ == "__main__":
    main()
