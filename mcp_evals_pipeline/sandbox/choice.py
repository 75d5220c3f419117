"""Which box an agent works in: the one decision for every way a trial starts (the CLI, the UI, backfills and
schedules all reach trials.run_trial with the trial options' `sandbox` field, usually unset).

- `hardened` (bubblewrap) by default, for every agent: openai, codex, claude, and replay too (it needs no network);
- `docker` where configured: `MCP_EVALS_SANDBOX=docker`, or asked for (`--sandbox docker`, run config);
- `local` (no isolation) only when asked for by name (`--sandbox local`, `MCP_EVALS_SANDBOX=local`, run config
  `sandbox: local`): then printed on the run and recorded on the trial as UNBOXED.

Where the chosen box cannot be made the trial fails closed (SandboxError: the trial's `infra.sandbox`, with the
reason): there is no fallback to `local`.

The default hardened box runs with net=proxy unless MCP_EVALS_SANDBOX_NET says otherwise: only its own loopback,
the package registries through the allow-listing egress proxy, and the endpoints a runner relays in (the CLI
agents' key proxy); never the host's loopback, where the Dagster webserver and other trials listen.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from mcp_evals_pipeline.sandbox.base import Sandbox, SandboxError

ENV = "MCP_EVALS_SANDBOX"
NET_ENV = "MCP_EVALS_SANDBOX_NET"
DEFAULT = "hardened"
NAMES = ("hardened", "docker", "local")
# An agent box's network unless NET_ENV is set: registries via the egress proxy, relayed endpoints, nothing else.
DEFAULT_NET = "proxy"
UNBOXED = "UNBOXED (local, asked for by name)"
LOOPBACK = ("127.0.0.1", "localhost", "::1")


class NoBox(SandboxError):
    """The chosen box cannot be made on this host (the reason says what is missing): the trial fails closed."""


@dataclass(frozen=True)
class BoxChoice:
    """The backend an agent gets, and who chose it."""

    agent: str
    backend: str
    source: str  # "default" | "MCP_EVALS_SANDBOX" | "asked" (--sandbox, a run config's `sandbox`)

    @property
    def unboxed(self) -> bool:
        return self.backend == "local"

    def describe(self) -> str:
        """One line for the console: what boxes the agent, loudly when nothing does."""
        how = {"default": "the default", ENV: f"{ENV}={self.backend}", "asked": f"--sandbox {self.backend}"}[
            self.source]
        if self.unboxed:
            return (f"{UNBOXED}: agent {self.agent} runs on the host with no isolation ({how}); it can read the "
                    "harness's environment and files and reach the host's network")
        return f"agent {self.agent} runs boxed: {self.backend} ({how})"


def choose_backend(agent: str, asked: str | None = None) -> BoxChoice:
    """`asked` (the trial options' `sandbox`) first, then MCP_EVALS_SANDBOX, else hardened. Raises SandboxError
    for a name that is not a backend."""
    source = "asked" if asked else (ENV if os.environ.get(ENV) else "default")
    name = asked or os.environ.get(ENV) or DEFAULT
    if name not in NAMES:
        where = "--sandbox / run config `sandbox`" if source == "asked" else ENV
        raise SandboxError(f"{where}: unknown sandbox backend {name!r} (have: {', '.join(NAMES)})")
    return BoxChoice(agent=agent, backend=name, source=source)


def agent_net() -> str:
    return os.environ.get(NET_ENV) or DEFAULT_NET


def box_unavailable(choice: BoxChoice) -> str | None:
    """Why the chosen box cannot be made on this host (None when it can, or when only opening it will tell: docker
    answers for itself). The same test HardenedSandbox makes, asked before any work."""
    if choice.backend != "hardened":
        return None
    from mcp_evals_pipeline.sandbox.hardened import detect

    support = detect()
    if support.bwrap is None or not support.nsenter_setpriv or os.geteuid() != 0 or (
            agent_net() != "host" and not support.netns):
        missing = "; ".join(support.missing) or "no network namespace"
        return (f"the hardened sandbox for agent {choice.agent} is not available on this host: {missing} (install "
                f"what is missing, or set {ENV}=docker)")
    return None


def open_agent_box(choice: BoxChoice, workspace: Path, extra_env: dict[str, str] | None = None) -> Sandbox:
    """The chosen box, opened; NoBox (with the reason) when this host cannot make it, SandboxError when making it
    failed. Imports the backends lazily: the docker one imports the docker SDK."""
    if (why := box_unavailable(choice)) is not None:
        raise NoBox(why)
    if choice.backend == "hardened":
        from mcp_evals_pipeline.sandbox.hardened import HardenedSandbox

        return HardenedSandbox(workspace, extra_env=extra_env, net=agent_net())
    if choice.backend == "docker":
        from mcp_evals_pipeline.sandbox.docker_backend import DockerSandbox

        return DockerSandbox(workspace, extra_env=extra_env)
    from mcp_evals_pipeline.sandbox.local import LocalSandbox

    box = LocalSandbox(workspace, extra_env=extra_env)
    how = {ENV: f"{ENV}=local", "asked": "--sandbox local"}.get(choice.source, choice.source)
    box.isolation = f"{UNBOXED} via {how}: {box.isolation}"
    return box


def relay_loopback_env(box: Sandbox, env: dict[str, str]) -> None:
    """What the agent phase's variables point at on the host's loopback (an OAuth task's live IdP), reachable at the
    same URL in the box: each such port relayed (`allow_endpoint`), nothing else of the host's loopback. A box
    without a network by choice (MCP_EVALS_SANDBOX_NET=none) keeps none: the agent works without them."""
    for value in env.values():
        parts = urlsplit(value)
        if parts.scheme in ("http", "https") and (parts.hostname or "") in LOOPBACK and parts.port:
            with contextlib.suppress(SandboxError):
                box.allow_endpoint(value)
