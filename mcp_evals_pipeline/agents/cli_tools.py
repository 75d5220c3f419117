"""Pinned agent CLIs from npm (Codex, Claude Code), installed once into the project cache.

Each CLI is installed with the grader's pinned Node toolchain (node_toolchain.ensure_toolchain) into
`cache_dir()/agent-clis/<package>@<version>/`, built under a file lock in a staging directory and published by an
atomic rename, so concurrent trials build it once and every later call costs a stat. `ensure_cli` returns the bin
directory (node_modules/.bin); the CLIs are `#!/usr/bin/env node` scripts, so put `cli_path(bin_dir)` first on
their PATH to run them with the pinned node.

    python -m mcp_evals_pipeline.agents.cli_tools codex     # install (if needed) and print the bin dir
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mcp_evals_pipeline.agents.key_proxy import KeyProxy
from mcp_evals_pipeline.build_cache import cached_build
from mcp_evals_pipeline.node_toolchain import ToolchainError, ensure_toolchain, npm_env
from mcp_evals_pipeline.paths import cache_dir
from mcp_evals_pipeline.sandbox.base import Sandbox

# Exact versions (the npm `latest` tags on 2026-11-30). Bump deliberately: a CLI release changes agent behaviour.
CLI_PINS: dict[str, tuple[str, str]] = {
    "codex": ("@openai/codex", "0.171.0"),
    "claude": ("@anthropic-ai/claude-code", "2.1.332"),
}
# The executable each package puts in node_modules/.bin.
CLI_BINARIES: dict[str, str] = {"@openai/codex": "codex", "@anthropic-ai/claude-code": "claude"}
INSTALL_TIMEOUT_S = 900


class CliInstallError(Exception):
    """An agent CLI could not be installed (registry, network, disk, toolchain): the host's problem, never the
    trial's. Runners map it to infra.agent."""


def cli_root(package: str, version: str) -> Path:
    """Where `package@version` lives once installed (the scope's slash becomes "+": one directory level)."""
    return cache_dir() / "agent-clis" / f"{package.replace('/', '+')}@{version}"


def cli_path(bin_dir: Path) -> str:
    """A PATH for running an installed CLI: its bin dir, then the pinned node's, then the system's."""
    try:
        node_bin = str(ensure_toolchain().bin_dir)
    except ToolchainError as exc:  # pragma: no cover - ensure_cli already built it
        raise CliInstallError(str(exc)) from exc
    return f"{bin_dir}:{node_bin}:/usr/local/bin:/usr/bin:/bin"


def _build(target: Path, package: str, version: str) -> None:
    try:
        toolchain = ensure_toolchain()
    except ToolchainError as exc:
        raise CliInstallError(f"cannot install {package}@{version}: {exc}") from exc
    target.mkdir(parents=True)
    (target / "package.json").write_text(json.dumps(
        {"name": "mcp-evals-agent-cli", "private": True, "dependencies": {package: version}}, indent=2) + "\n")
    home = target / ".home"
    home.mkdir()
    env = npm_env(home, [toolchain.bin_dir])
    cmd = toolchain.npm("install", "--no-audit", "--no-fund", "--loglevel=error", "--save-exact")
    try:
        done = subprocess.run(cmd, cwd=target, env=env, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S,
                              check=False)
    except subprocess.TimeoutExpired as exc:
        raise CliInstallError(f"npm install of {package}@{version} timed out after {INSTALL_TIMEOUT_S}s") from exc
    except OSError as exc:
        raise CliInstallError(f"npm install of {package}@{version} could not start: {exc}") from exc
    if done.returncode != 0:
        raise CliInstallError(f"npm install of {package}@{version} failed: {(done.stderr or done.stdout)[-2000:]}")
    binary = target / "node_modules" / ".bin" / CLI_BINARIES.get(package, package.rsplit("/", 1)[-1])
    if not binary.exists():
        raise CliInstallError(f"npm install of {package}@{version} produced no {binary.name} executable")
    shutil.rmtree(home, ignore_errors=True)


def ensure_cli(package: str, version: str) -> Path:
    """The bin dir of `package@version`, installed on first use (idempotent, safe across processes).

    Raises CliInstallError."""
    root = cli_root(package, version)
    root, _ = cached_build(root.parent, root.name, lambda stage: _build(stage, package, version), dated=False,
                           sealed=False, marker=json.dumps({"package": package, "version": version}))
    return root / "node_modules" / ".bin"


@contextmanager
def private_run_dir(sandbox: Sandbox, prefix: str) -> Iterator[Path]:
    """A CLI runner's private directory (HOME, config, the key file, the CLI's output), from the sandbox
    (`Sandbox.private_dir`: the hardened backend bind-mounts it into the box), removed afterwards."""
    path = sandbox.private_dir(prefix)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def reachable_endpoint(sandbox: Sandbox, url: str) -> str:
    """The URL at which the CLI in the sandbox reaches a model endpoint (`Sandbox.allow_endpoint`; raises the
    sandbox's SandboxError when it cannot)."""
    return sandbox.allow_endpoint(url)


@contextmanager
def keyed_endpoint(sandbox: Sandbox, upstream: str, credentials: dict[str, str]) -> Iterator[tuple[str, KeyProxy]]:
    """(URL, proxy) at which the CLI reaches `upstream` through a KeyProxy holding `credentials`: the key the CLI is
    given is the proxy's per-run placeholder (`pass_key`), so the real one is nowhere the agent's commands could
    read it."""
    with KeyProxy(upstream, credentials) as proxy:
        yield reachable_endpoint(sandbox, proxy.url), proxy


def ensure_pinned_cli(agent: str) -> Path:
    """The bin dir of the CLI pinned for `agent` ("codex", "claude")."""
    package, version = CLI_PINS[agent]
    return ensure_cli(package, version)


def main(argv: list[str] | None = None) -> int:
    agents = (argv if argv is not None else sys.argv[1:]) or sorted(CLI_PINS)
    for agent in agents:
        if agent not in CLI_PINS:
            print(f"error: unknown agent CLI {agent!r} (known: {', '.join(sorted(CLI_PINS))})", file=sys.stderr)
            return 2
        try:
            bin_dir = ensure_pinned_cli(agent)
        except CliInstallError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        package, version = CLI_PINS[agent]
        print(f"{agent}: {package}@{version} {bin_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
