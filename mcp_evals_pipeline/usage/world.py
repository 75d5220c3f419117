"""A usage trial's world: the recording fake of the API, and the server under evaluation over it, both fresh.

The fake binds 127.0.0.1 only and records every request (upstreams/base.py); the server is a real process spoken
to by the real `mcp` client over Streamable HTTP. A server in this repository runs with the harness's Python in a
sanitized environment (no keys, no shell setup): it is our own code, pinned by the checkout. Published servers
(`server.package`) are not runnable yet.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_evals_pipeline import procs
from mcp_evals_pipeline.contracts.failures import Infra
from mcp_evals_pipeline.contracts.usage import UsageContract
from mcp_evals_pipeline.paths import REPO_ROOT
from mcp_evals_pipeline.upstreams import FakeService, RecordedRequest, start_service

START_TIMEOUT_S = 30.0
CALL_TIMEOUT_S = 30.0


class WorldError(Exception):
    """The world or the server under evaluation did not come up: nothing can be judged (infra)."""

    infra_code = Infra.SERVER


@dataclass
class World:
    service: FakeService
    url: str  # the server's MCP endpoint
    server_log: Path

    def requests(self) -> list[RecordedRequest]:
        return self.service.requests()

    def server_output(self) -> str:
        return procs.tail(self.server_log, 4000)


@contextlib.contextmanager
def running_world(contract: UsageContract) -> Iterator[World]:
    if contract.server.path is None:
        raise WorldError(f"published servers ({contract.server.package}) cannot be run yet")
    entry = (REPO_ROOT / contract.server.path).resolve()
    if not entry.is_file() or not entry.is_relative_to(REPO_ROOT):
        raise WorldError(f"no server at {contract.server.path} in this repository")
    service = start_service(contract.world)
    scratch = Path(tempfile.mkdtemp(prefix="usage-world-"))
    proc = None
    try:
        port = procs.free_port()
        env = procs.sanitized_env(home=scratch, tmp=scratch, extra={
            **{k: v.replace("{world}", service.base_url) for k, v in contract.server.env.items()},
            "PORT": str(port)})
        log = scratch / "server.log"
        proc = procs.spawn([sys.executable, str(entry)], cwd=scratch, env=env, log_path=log)
        deadline = time.monotonic() + START_TIMEOUT_S
        while not procs.can_connect("127.0.0.1", port):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise WorldError(f"the server {contract.server.path} did not listen on PORT={port}: "
                                 f"{procs.tail(log, 800)}")
            time.sleep(0.05)
        yield World(service, f"http://127.0.0.1:{port}/mcp", log)
    finally:
        if proc is not None:
            procs.kill_tree(proc)
        service.stop()
        shutil.rmtree(scratch, ignore_errors=True)


@contextlib.asynccontextmanager
async def mcp_client(url: str) -> AsyncIterator[Client]:
    """The real mcp client on the server under evaluation."""
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=CALL_TIMEOUT_S + 30)) as http:
        client = Client(streamable_http_client(url, http_client=http), mode="legacy",  # type: ignore[arg-type]
                        cache=None, read_timeout_seconds=CALL_TIMEOUT_S)
        async with client:
            yield client
