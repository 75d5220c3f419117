"""The sandbox seam: where an agent works: hardened (bubblewrap), docker or local, as sandbox/choice.py chooses.

A sandbox owns one workspace directory and runs commands in it for the agent's tools. Every path a tool names is
resolved inside the workspace; every process it starts is killed when the sandbox closes.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path

from mcp_evals_pipeline.paths import cache_dir

# The host's pinned agent CLIs and Node toolchain (under cache_dir()): what a CLI runner runs in a box, mounted
# read-only at the same path by the backends with a filesystem of their own (hardened, docker).
TOOL_DIRS = ("agent-clis", "node-toolchain")


def tool_dirs() -> list[Path]:
    """TOOL_DIRS, created now so that a CLI installed after a box started is visible in it."""

    found = []
    for name in TOOL_DIRS:
        with contextlib.suppress(OSError):
            (cache_dir() / name).mkdir(parents=True, exist_ok=True)
            found.append((cache_dir() / name).resolve())
    return found


def chown_tree(root: Path, uid: int, gid: int) -> None:
    """lchown everything under root (never following a symlink an agent planted, even one swapped in mid-walk)."""
    os.chown(root, uid, gid, follow_symlinks=False)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            with contextlib.suppress(FileNotFoundError):
                os.chown(os.path.join(dirpath, name), uid, gid, follow_symlinks=False)


class SandboxError(Exception):
    """The sandbox could not be prepared or used: an infra failure (infra.sandbox), not the agent's."""


class PathEscape(ValueError):
    """A tool named a path outside the workspace: the agent's error, reported back to it."""


@dataclass(frozen=True)
class CommandResult:
    exit_code: int | None  # None: killed at the time limit
    output: str
    timed_out: bool
    duration_ms: int


class Sandbox(ABC):
    backend: str
    isolation: str  # what the backend achieved, recorded on every trial row

    def __init__(self, workspace: Path):
        self.workspace = workspace.resolve()

    def resolve(self, rel: str) -> Path:
        path = (self.workspace / rel).resolve()
        if not path.is_relative_to(self.workspace):
            raise PathEscape(f"path {rel!r} is outside the workspace")
        return path

    def read_file(self, rel: str, max_bytes: int = 200_000) -> str:
        path = self.resolve(rel)
        data = path.read_bytes()
        text = data[:max_bytes].decode("utf-8", errors="replace")
        return text + (f"\n[... {len(data) - max_bytes} more bytes]" if len(data) > max_bytes else "")

    def write_file(self, rel: str, content: str) -> int:
        path = self.resolve(rel)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        return len(content.encode())

    def list_files(self, rel: str = ".", limit: int = 500) -> list[str]:
        root = self.resolve(rel)
        skip = {".venv", "node_modules", "__pycache__", ".git"}
        out: list[str] = []
        for path in sorted(root.rglob("*")):
            if any(part in skip for part in path.relative_to(self.workspace).parts):
                continue
            if path.is_file():
                out.append(path.relative_to(self.workspace).as_posix())
                if len(out) >= limit:
                    break
        return out

    def private_dir(self, prefix: str = "agent-") -> Path:
        """A fresh directory outside the workspace, at the same path for the host and for commands run here (a CLI
        runner's HOME and config; never the key, which stays in agents/key_proxy). Backends with their own
        filesystem override it; the caller removes it (or close() does)."""
        scratch = cache_dir() / "agent-runs"
        scratch.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=prefix, dir=scratch))

    def allow_endpoint(self, url: str) -> str:
        """Make a model endpoint reachable from commands run here; returns the URL to use. The host's network
        reaches it as is; backends with their own network override it (raising SandboxError when they cannot)."""
        return url

    @abstractmethod
    def run(self, command: str, timeout_s: float) -> CommandResult:
        """Run a shell command in the workspace; output is combined stdout+stderr, truncated at the end."""

    @abstractmethod
    def close(self) -> None:
        """Kill everything this sandbox started."""

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
