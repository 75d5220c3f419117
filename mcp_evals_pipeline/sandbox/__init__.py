"""Sandboxes agents work in."""

from __future__ import annotations

from pathlib import Path

from mcp_evals_pipeline.sandbox.base import CommandResult, PathEscape, Sandbox, SandboxError
from mcp_evals_pipeline.sandbox.choice import BoxChoice, choose_backend, open_agent_box
from mcp_evals_pipeline.sandbox.docker_backend import DockerSandbox
from mcp_evals_pipeline.sandbox.hardened import HardenedSandbox, require_isolation
from mcp_evals_pipeline.sandbox.local import LocalSandbox

BACKENDS: dict[str, type[Sandbox]] = {"local": LocalSandbox, "hardened": HardenedSandbox, "docker": DockerSandbox}


def open_sandbox(workspace: Path, backend: str | None = None, extra_env: dict[str, str] | None = None,
                 agent: str = "agent") -> Sandbox:
    """An agent's box as sandbox/choice.py chooses it: `backend` if asked, else MCP_EVALS_SANDBOX, else hardened;
    SandboxError when it cannot be made (never a fallback to local)."""
    return open_agent_box(choose_backend(agent, backend), workspace, extra_env)


__all__ = ["BACKENDS", "BoxChoice", "CommandResult", "PathEscape", "Sandbox", "SandboxError", "choose_backend",
           "open_agent_box", "open_sandbox", "require_isolation"]
