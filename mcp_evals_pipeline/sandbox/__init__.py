"""Sandboxes agents work in."""

from __future__ import annotations

import os
from pathlib import Path

from mcp_evals_pipeline.sandbox.base import CommandResult, PathEscape, Sandbox, SandboxError
from mcp_evals_pipeline.sandbox.docker_backend import DockerSandbox
from mcp_evals_pipeline.sandbox.hardened import HardenedSandbox, require_isolation
from mcp_evals_pipeline.sandbox.local import LocalSandbox

BACKENDS: dict[str, type[Sandbox]] = {"local": LocalSandbox, "hardened": HardenedSandbox, "docker": DockerSandbox}


def open_sandbox(workspace: Path, backend: str | None = None, extra_env: dict[str, str] | None = None) -> Sandbox:
    """`MCP_EVALS_SANDBOX` selects the backend (default local)."""
    name = backend or os.environ.get("MCP_EVALS_SANDBOX", "local")
    if name not in BACKENDS:
        raise SandboxError(f"unknown sandbox backend {name!r} (have: {', '.join(BACKENDS)})")
    return BACKENDS[name](workspace, extra_env=extra_env)  # type: ignore[call-arg]


__all__ = ["BACKENDS", "CommandResult", "PathEscape", "Sandbox", "SandboxError", "open_sandbox", "require_isolation"]
