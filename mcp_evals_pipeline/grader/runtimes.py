"""The runtime seam: what differs between a Python and a Node workspace (install, typecheck, start command).

Everything after `start` speaks MCP over HTTP and is the same for every runtime.
"""

from __future__ import annotations

import shutil
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path

from mcp_evals_pipeline.contracts.grade import SdkPath
from mcp_evals_pipeline.grader import python_env, source
from mcp_evals_pipeline.grader.python_env import InstallError

__all__ = ["RUNTIMES", "InstallError", "Installation", "Runtime", "runtime_for"]


@dataclass
class Installation:
    """An installed workspace: where its executables are and what got installed."""

    detail: str
    path_prefix: list[Path]
    interpreter: Path
    versions: dict[str, str | None]  # sdkPath -> installed version of that SDK
    private_root: Path | None = None
    # Where build and server commands run: a grader-private copy of the workspace when the runtime needs its
    # dependencies beside the code (node_modules); None runs them in the workspace itself.
    run_dir: Path | None = None

    def sdk_version(self, sdk_path: SdkPath) -> str | None:
        return self.versions.get(sdk_path) or self.versions.get("official-sdk")

    def close(self) -> None:
        if self.private_root is not None:
            shutil.rmtree(self.private_root, ignore_errors=True)


class Runtime(ABC):
    name: str
    source_suffixes: tuple[str, ...]

    def source_files(self, workspace: Path) -> list[Path]:
        return source.source_files(workspace, self.source_suffixes)

    @abstractmethod
    def install(self, workspace: Path) -> Installation:
        """Blocking; raises InstallError."""

    @abstractmethod
    def typecheck(self, workspace: Path, installation: Installation | None) -> list[str]:
        """One line per problem; empty when the workspace typechecks (source-imports tasks have no install)."""

    @abstractmethod
    def default_start_command(self, installation: Installation, entry: Path) -> list[str]: ...

    @abstractmethod
    def imported_modules(self, workspace: Path) -> set[str]: ...


class PythonRuntime(Runtime):
    name = "python"
    source_suffixes = source.PY_SUFFIXES

    def install(self, workspace: Path) -> Installation:
        env = python_env.ensure_env(workspace)
        versions = {
            "official-sdk": env.package_version("mcp"),
            "fastmcp": env.package_version("fastmcp"),
            "mcp-use": env.package_version("mcp-use"),
        }
        how = "reused environment" if env.reused else ("private environment" if env.private else "new environment")
        mcp_version = versions["official-sdk"]
        detail = f"{env.declaration} -> {how} {env.root.name}" + (f" (mcp {mcp_version})" if mcp_version else "")
        return Installation(detail, [env.bin_dir], env.python, versions, env.root if env.private else None)

    def typecheck(self, workspace: Path, installation: Installation | None) -> list[str]:
        # Byte-compilation in memory with the grader's interpreter, which is the environment's (uv venv --python).
        files = self.source_files(workspace)
        if not files:
            return ["no .py source files in the workspace"]
        return source.compile_errors(workspace, files)

    def default_start_command(self, installation: Installation, entry: Path) -> list[str]:
        return [str(installation.interpreter), str(entry)]

    def imported_modules(self, workspace: Path) -> set[str]:
        return source.python_imports(self.source_files(workspace))


RUNTIMES: dict[str, Runtime] = {"python": PythonRuntime()}

from mcp_evals_pipeline.grader.node_runtime import NodeRuntime  # noqa: E402 - it subclasses Runtime above

RUNTIMES["node"] = NodeRuntime()


def runtime_for(name: str) -> Runtime:
    try:
        return RUNTIMES[name]
    except KeyError:
        raise KeyError(f"no {name!r} runtime in this grader (have: {', '.join(RUNTIMES)})") from None
