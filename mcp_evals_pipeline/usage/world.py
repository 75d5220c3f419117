"""A usage trial's world: the recording fake of the API, and the server under evaluation over it, both fresh.

The fake binds 127.0.0.1 only and records every request (upstreams/base.py); the server is a real process spoken
to by the real `mcp` client over Streamable HTTP. A server in this repository runs with the harness's Python in a
sanitized environment (no keys, no shell setup): it is our own code, pinned by the checkout. Published servers
(`server.package`) are not runnable yet.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_evals_pipeline import procs
from mcp_evals_pipeline.contracts.failures import Infra
from mcp_evals_pipeline.contracts.usage import UsageContract
from mcp_evals_pipeline.paths import REPO_ROOT
from mcp_evals_pipeline.upstreams import FakeService, RecordedRequest, start_service

START_TIMEOUT_S = 30.0
START_ATTEMPTS = 3  # a server that exits before it listens (its port taken meanwhile) gets another port
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


class _Launch:
    """The world started and the server spawned; ready once the server listens. Spawned from the calling thread:
    the server dies with that thread (procs.spawn's parent-death signal), so callers spawn from a thread that
    outlives the world (never an anyio worker thread, which may exit while the world is in use)."""

    def __init__(self, contract: UsageContract):
        if contract.server.path is None:
            raise WorldError(f"published servers ({contract.server.package}) cannot be run yet")
        entry = (REPO_ROOT / contract.server.path).resolve()
        if not entry.is_file() or not entry.is_relative_to(REPO_ROOT):
            raise WorldError(f"no server at {contract.server.path} in this repository")
        self.contract = contract
        self.entry = entry
        self.service = start_service(contract.world)
        self.scratch = Path(tempfile.mkdtemp(prefix="usage-world-"))
        self.log = self.scratch / "server.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.spawns = 0
        try:
            self._spawn()
        except BaseException:
            self.stop()
            raise
        self.deadline = time.monotonic() + START_TIMEOUT_S

    def _spawn(self) -> None:
        self.spawns += 1
        self.port = procs.free_port()
        env = procs.sanitized_env(home=self.scratch, tmp=self.scratch, extra={
            **{k: v.replace("{world}", self.service.base_url) for k, v in self.contract.server.env.items()},
            "PORT": str(self.port)})
        self.proc = procs.spawn([sys.executable, str(self.entry)], cwd=self.scratch, env=env, log_path=self.log)

    def ready(self) -> bool:
        """True once *our* server listens on its port (a port handed out and released can go to another world's
        fake, or to a connection, before the server binds it); a server that lost that race is started again on
        another port. Raises WorldError when it keeps exiting or runs out of time."""
        assert self.proc is not None
        if self.port in procs.listening_ports(self.proc.pid):
            return True
        if self.proc.poll() is not None and self.spawns < START_ATTEMPTS:
            self._spawn()
            return False
        if self.proc.poll() is not None or time.monotonic() > self.deadline:
            raise WorldError(f"the server {self.contract.server.path} did not listen on PORT={self.port}: "
                             f"{procs.tail(self.log, 800)}")
        return False

    def world(self) -> World:
        return World(self.service, f"http://127.0.0.1:{self.port}/mcp", self.log)

    def stop(self) -> None:
        if self.proc is not None:
            procs.kill_tree(self.proc)
        self.service.stop()
        shutil.rmtree(self.scratch, ignore_errors=True)


@contextlib.contextmanager
def running_world(contract: UsageContract) -> Iterator[World]:
    launch = _Launch(contract)
    try:
        while not launch.ready():
            time.sleep(0.05)
        yield launch.world()
    finally:
        launch.stop()


@contextlib.asynccontextmanager
async def running_world_async(contract: UsageContract) -> AsyncIterator[World]:
    """running_world for an event loop: spawned from the loop's thread, waited for without blocking it."""
    launch = _Launch(contract)
    try:
        while not launch.ready():
            await anyio.sleep(0.05)
        yield launch.world()
    finally:
        await anyio.to_thread.run_sync(launch.stop)


def result_text(result: Any) -> str:
    """The text of a CallToolResult's content blocks (what a model or a transcript reads of it)."""
    return " ".join(getattr(block, "text", "") for block in result.content)


@contextlib.asynccontextmanager
async def mcp_client(url: str, **options: Any) -> AsyncIterator[Client]:
    """The real mcp client on the server under evaluation; `options` go to mcp.Client (e.g. an elicitation
    callback)."""
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=CALL_TIMEOUT_S + 30)) as http:
        client = Client(streamable_http_client(url, http_client=http), mode="legacy",  # type: ignore[arg-type]
                        cache=None, read_timeout_seconds=CALL_TIMEOUT_S, **options)
        async with client:
            yield client
