"""A usage trial's world: the recording fake of the API, and the server under evaluation over it, both fresh.

The fake binds 127.0.0.1 only and records every request (upstreams/base.py); the server is a real process spoken
to by the real `mcp` client, over Streamable HTTP or stdio. A server in this repository runs with the harness's
Python in a sanitized environment (no keys, no shell setup): it is our own code, pinned by the checkout. A
published server (`server.package`) is installed and boxed like graded code (usage/published.py). A stdio server is
started by the client that speaks to it (the recording proxy's), from the command the world prepares.
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
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from mcp_evals_pipeline import procs
from mcp_evals_pipeline.contracts.failures import Infra
from mcp_evals_pipeline.contracts.usage import UsageContract
from mcp_evals_pipeline.paths import REPO_ROOT
from mcp_evals_pipeline.upstreams import FakeService, RecordedRequest, start_service
from mcp_evals_pipeline.usage.published import PublishedServerError, installed

START_TIMEOUT_S = 30.0
START_ATTEMPTS = 3  # a server that exits before it listens (its port taken meanwhile) gets another port
CALL_TIMEOUT_S = 30.0
READY_POLL_S = 0.02  # a world's start is in every usage trial's overhead: a check costs ~1 ms


class WorldError(Exception):
    """The world or the server under evaluation did not come up: nothing can be judged (infra)."""

    infra_code = Infra.SERVER


@dataclass(frozen=True)
class StdioServer:
    """A stdio server to start: the (boxed) command, its environment and directory, where its stderr goes."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path
    log: Path


Upstream = str | StdioServer  # a Streamable HTTP endpoint, or a stdio server to start


@dataclass
class World:
    service: FakeService | None  # None: a server whose state is its own (no API behind it, nothing to record)
    upstream: Upstream  # the server under evaluation: its MCP endpoint, or how to start it over stdio
    server_log: Path
    box: str  # how the server is isolated

    @property
    def url(self) -> str:
        assert isinstance(self.upstream, str), "a stdio server has no URL"
        return self.upstream

    def requests(self) -> list[RecordedRequest]:
        return self.service.requests() if self.service is not None else []

    def server_output(self) -> str:
        return procs.tail(self.server_log, 4000)


class _Launch:
    """The world started and the server spawned; ready once the server listens. Spawned from the calling thread:
    the server dies with that thread (procs.spawn's parent-death signal), so callers spawn from a thread that
    outlives the world (never an anyio worker thread, which may exit while the world is in use)."""

    def __init__(self, contract: UsageContract):
        server = contract.server
        self.contract = contract
        self.entry: Path | None = None
        if server.path is not None:
            entry = (REPO_ROOT / server.path).resolve()
            if not entry.is_file() or not entry.is_relative_to(REPO_ROOT):
                raise WorldError(f"no server at {server.path} in this repository")
            self.entry = entry
        self.stack = contextlib.ExitStack()
        self.proc: subprocess.Popen[bytes] | None = None
        self.stdio_argv: list[str] = []
        self.spawns = 0
        self.port: int | None = None
        try:
            self.service = (None if contract.world is None else
                            self.stack.enter_context(_stopping(start_service(contract.world, contract.plants))))
            self.scratch = Path(tempfile.mkdtemp(prefix="usage-world-"))
            self.stack.callback(shutil.rmtree, self.scratch, True)
            self.log = self.scratch / "server.log"
            self.log.touch()
            self.published = None
            if server.package is not None:
                try:
                    self.published = self.stack.enter_context(installed(server, self.scratch))
                except PublishedServerError as exc:
                    raise WorldError(str(exc)) from exc
            if server.transport == "http":
                self._spawn()
        except BaseException:
            self.stop()
            raise
        self.deadline = time.monotonic() + START_TIMEOUT_S

    def _env(self) -> dict[str, str]:
        base = self.service.base_url if self.service is not None else ""
        return {k: v.replace("{world}", base) for k, v in self.contract.server.env.items()}

    def _command(self, port: int | None) -> tuple[list[str], dict[str, str], Path, str]:
        """(argv, environment, cwd, isolation) of the server under evaluation."""
        if self.published is not None:
            try:
                return self.published.command(port, self._env())
            except Exception as exc:  # no box for third-party code on this host: never run it unboxed
                raise WorldError(f"{self.contract.server.package} cannot be boxed here: {exc}") from exc
        assert self.entry is not None
        extra = {**self._env(), **({"PORT": str(port)} if port is not None else {})}
        env = procs.sanitized_env(home=self.scratch, tmp=self.scratch, extra=extra)
        # -I (isolated): the server needs nothing of the environment's PYTHON* variables, user site or script
        # directory, and starts ~0.1 s sooner without them (measured: 0.76-0.85 s against 0.88-0.94 s).
        return ([sys.executable, "-I", str(self.entry)], env, self.scratch,
                "our own server: the harness's Python, unboxed")

    def _spawn(self) -> None:
        if self.proc is not None:  # an earlier attempt's box and relays go before the next one's
            from mcp_evals_pipeline.sandbox import server_box  # lazily: the sandbox package imports docker

            server_box.stop(self.proc)
        self.spawns += 1
        self.port = procs.free_port()
        argv, env, cwd, self.box = self._command(self.port)
        self.proc = procs.spawn(argv, cwd=cwd, env=env, log_path=self.log)

    def ready(self) -> bool:
        """True once *our* server listens on its port (a port handed out and released can go to another world's
        fake, or to a connection, before the server binds it); a server that lost that race is started again on
        another port. Raises WorldError when it keeps exiting or runs out of time. A stdio server is ready at
        once: the proxy's client starts it."""
        if self.contract.server.transport == "stdio":
            return True
        assert self.proc is not None and self.port is not None
        from mcp_evals_pipeline.sandbox import server_box  # lazily: the sandbox package imports docker

        pid = server_box.server_pid(self.proc)
        if pid is not None and self.port in procs.listening_ports(pid):
            return True
        if self.proc.poll() is not None and self.spawns < START_ATTEMPTS:
            self._spawn()
            return False
        if self.proc.poll() is not None or time.monotonic() > self.deadline:
            raise WorldError(f"the server {self._name()} did not listen on PORT={self.port}: "
                             f"{procs.tail(self.log, 800)}")
        return False

    def _name(self) -> str:
        return self.contract.server.path or self.contract.server.package or "?"

    def world(self) -> World:
        if self.contract.server.transport == "stdio":
            argv, env, cwd, self.box = self._command(None)
            self.stdio_argv = argv
            return World(self.service, StdioServer(argv, env, cwd, self.log), self.log, self.box)
        from mcp_evals_pipeline.sandbox import server_box  # lazily: the sandbox package imports docker

        assert self.proc is not None
        at = server_box.endpoint(self.proc, self.port)  # a boxed server answers through its relay on the host
        return World(self.service, f"http://127.0.0.1:{at}/mcp", self.log, self.box)

    def stop(self) -> None:
        if self.proc is not None:
            from mcp_evals_pipeline.sandbox import server_box  # lazily: the sandbox package imports docker

            server_box.stop(self.proc)
        if self.stdio_argv:
            from mcp_evals_pipeline.sandbox import server_box  # lazily: the sandbox package imports docker

            server_box.release(self.stdio_argv)  # its client ended the process; its box's relays go here
        self.stack.close()


@contextlib.contextmanager
def _stopping(service: FakeService) -> Iterator[FakeService]:
    try:
        yield service
    finally:
        service.stop()


@contextlib.contextmanager
def running_world(contract: UsageContract) -> Iterator[World]:
    launch = _Launch(contract)
    try:
        while not launch.ready():
            time.sleep(READY_POLL_S)
        yield launch.world()
    finally:
        launch.stop()


@contextlib.asynccontextmanager
async def running_world_async(contract: UsageContract) -> AsyncIterator[World]:
    """running_world for an event loop: spawned from the loop's thread, waited for without blocking it."""
    launch = _Launch(contract)
    try:
        while not launch.ready():
            await anyio.sleep(READY_POLL_S)
        yield launch.world()
    finally:
        await anyio.to_thread.run_sync(launch.stop)


def result_text(result: Any) -> str:
    """The text of a CallToolResult's content blocks (what a model or a transcript reads of it)."""
    return " ".join(getattr(block, "text", "") for block in result.content)


@contextlib.asynccontextmanager
async def mcp_client(upstream: Upstream, **options: Any) -> AsyncIterator[Client]:
    """The real mcp client on an MCP server: its Streamable HTTP endpoint, or a stdio server it starts (and stops
    with the session; its stderr into the server's log); `options` go to mcp.Client (e.g. an elicitation
    callback)."""
    settings: dict[str, Any] = {"mode": "legacy", "cache": None, "read_timeout_seconds": CALL_TIMEOUT_S, **options}
    if isinstance(upstream, StdioServer):
        params = StdioServerParameters(command=upstream.argv[0], args=upstream.argv[1:], env=upstream.env,
                                       cwd=upstream.cwd)
        with open(upstream.log, "a", encoding="utf-8") as errlog:
            async with Client(stdio_client(params, errlog=errlog), **settings) as client:  # type: ignore[arg-type]
                yield client
        return
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=CALL_TIMEOUT_S + 30)) as http:
        transport = streamable_http_client(upstream, http_client=http)
        async with Client(transport, **settings) as client:  # type: ignore[arg-type]
            yield client
