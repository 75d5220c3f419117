"""Where grading runs agent-written code: every step that touches the workspace's files runs in a box.

Install (uv, npm with lifecycle scripts), typecheck (tsc) and a contract's `buildCommand` run in a `StepBox`: a
hardened sandbox (sandbox/hardened.py: bubblewrap, system dirs read-only, only the grading's scratch writable, its
own pid/net namespaces, no capabilities, uid nobody, cgroup limits) whose network is the egress proxy's allow-list
(the package registries) for installs and nothing for the rest. The checkout, HOME, the harness's environment and
/proc, the other gradings' files and the shared caches are out of its reach. The graded server runs in the server
box (sandbox/server_box.py), also as nobody.

Fail closed: when no box can be made here, agent-written code does not run: the step raises `NoBox` and the trial
is `infra.sandbox` with the reason. `MCP_EVALS_UNSAFE_UNBOXED_GRADING=1` is the loud opt-out for debugging: the
steps then run on the host with a sanitized environment (and the record says so). `MCP_EVALS_GRADER_BOX=0`
disables the boxes (what a host without bubblewrap gets; tests use it to prove the fail-closed path).

`MCP_EVALS_GRADER_BOX=docker`: the same boxes as containers of the sandbox image (sandbox/docker_backend.py) on the
engine at DOCKER_HOST, for a host where a Docker engine is the isolation on offer: a step runs in a container with
a read-only root, the grading's scratch the only writable mount, the runtime read-only at its own path, no network
(installs reach the registries through the same egress proxy, relayed over a unix socket), every capability
dropped, no-new-privileges, uid nobody, memory and pids limits; the server runs in a container of its own
(sandbox/server_box.py). The sandbox image must share the host's C library (both are Debian bookworm here): the
runtimes are the host's, mounted.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcp_evals_pipeline.sandbox.base import Sandbox

UNBOXED_ENV = "MCP_EVALS_UNSAFE_UNBOXED_GRADING"
SWITCH_ENV = "MCP_EVALS_GRADER_BOX"
UNBOXED = "UNBOXED on the host (MCP_EVALS_UNSAFE_UNBOXED_GRADING=1)"


class NoBox(Exception):
    """No box can be made here, and agent-written code does not run without one (infra.sandbox)."""


def unboxed_allowed() -> bool:
    return os.environ.get(UNBOXED_ENV, "") == "1"


def boxes_enabled() -> bool:
    return os.environ.get(SWITCH_ENV, "1") != "0"


def box_kind() -> str:
    """bwrap (the default) | docker | off (MCP_EVALS_GRADER_BOX=0)."""
    value = os.environ.get(SWITCH_ENV, "1").strip().lower()
    return "off" if value == "0" else "docker" if value == "docker" else "bwrap"


def refuse(why: str) -> NoBox:
    return NoBox(f"agent-written code does not run without a box, and none can be made here: {why} "
                 f"({SWITCH_ENV}=docker boxes it in containers on a Docker engine; {UNBOXED_ENV}=1 runs it on the "
                 "host, for debugging only)")


@dataclass
class StepResult:
    returncode: int | None  # None: timed out
    output: str  # stdout and stderr, interleaved (the step's code prints what it likes here: never evidence)
    # The egress proxy's own record of upstream connections that failed during this step (sandbox/egress.py).
    unreachable: list[str] = field(default_factory=list)

    @property
    def timed_out(self) -> bool:
        return self.returncode is None


class StepBox:
    """One box for one or more steps of a grading; `root` (the grading's scratch) is its only writable path."""

    def __init__(self, root: Path, *, net: str, ro_paths: list[Path], ro_binds: list[tuple[Path, Path]]):
        self.root = root
        self._sandbox = None
        if not boxes_enabled():
            if not unboxed_allowed():
                raise refuse(f"{SWITCH_ENV}=0")
            self.description = UNBOXED
            return
        from mcp_evals_pipeline.sandbox.base import SandboxError

        try:
            self._sandbox = _docker_box(root, net, ro_paths, ro_binds) if box_kind() == "docker" else \
                _bwrap_box(root, net, ro_paths, ro_binds)
        except SandboxError as exc:
            if not unboxed_allowed():
                raise refuse(str(exc)) from exc
            self.description = UNBOXED
            return
        self.description = self._sandbox.isolation

    def run(self, argv: list[str], *, cwd: Path, env: Mapping[str, str], timeout_s: float) -> StepResult:
        if self._sandbox is None:  # the debugging opt-out
            try:
                done = subprocess.run(argv, cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL, capture_output=True,
                                      text=True, timeout=timeout_s, check=False, start_new_session=True)
            except subprocess.TimeoutExpired:
                return StepResult(None, "")
            return StepResult(done.returncode, done.stdout + done.stderr)
        # The box's own environment (sanitized, HOME and TMPDIR in the box, its proxy) plus the step's; the box
        # alone decides the network, so no host proxy setting a step passes on can route around the allow-list.
        own = {k: v for k, v in env.items() if k not in ("HOME", "TMPDIR") and "PROXY" not in k.upper()}
        assigns = " ".join(shlex.quote(f"{k}={v}") for k, v in own.items())
        command = f"cd {shlex.quote(str(cwd))} && exec env {assigns} {shlex.join(argv)}"
        failed_before = len(self._unreachable())
        result = self._sandbox.run(command, timeout_s)
        return StepResult(None if result.timed_out else result.exit_code, result.output,
                          self._unreachable()[failed_before:])

    def _unreachable(self) -> list[str]:
        proxy = getattr(self._sandbox, "_proxy", None)  # both box forms keep their EgressProxy (net=proxy) there
        return list(proxy.unreachable) if proxy is not None else []

    def close(self) -> None:
        """Kills everything the steps left running (the box's pid namespace, or its container) and hands the files
        back."""
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None



PIDS = 1024  # npm and uv run many workers; a fork bomb still stops here


def _bwrap_box(root: Path, net: str, ro_paths: list[Path], ro_binds: list[tuple[Path, Path]]) -> Sandbox:
    from mcp_evals_pipeline.sandbox.hardened import HardenedSandbox

    return HardenedSandbox(root, net=net, ro_paths=ro_paths, ro_binds=ro_binds, pids=PIDS)


def _docker_box(root: Path, net: str, ro_paths: list[Path], ro_binds: list[tuple[Path, Path]]) -> Sandbox:
    """A container with no network at all (net=proxy: the egress proxy over the io mount, nothing else)."""
    from mcp_evals_pipeline.sandbox.docker_backend import DockerSandbox, grading_config

    binds = tuple((p, p, "ro") for p in ro_paths) + tuple((src, dst, "ro") for src, dst in ro_binds)
    return DockerSandbox(root, config=grading_config(pids=PIDS), binds=binds, egress=net == "proxy")
