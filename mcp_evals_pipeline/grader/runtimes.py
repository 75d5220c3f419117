"""The runtime seam: what differs between a Python and a Node workspace (install, typecheck, start command).

Everything after `start` speaks MCP over HTTP and is the same for every runtime.
"""

from __future__ import annotations

from pathlib import Path

from mcp_evals_pipeline.grader import python_env, source
from mcp_evals_pipeline.grader.node_runtime import NodeRuntime
from mcp_evals_pipeline.grader.python_env import InstallError
from mcp_evals_pipeline.grader.runtime_base import Installation, Runtime
from mcp_evals_pipeline.grader.scratch import Workdir

__all__ = ["RUNTIMES", "InstallError", "Installation", "Runtime", "Workdir", "runtime_for"]


PYTHON_SDK_PACKAGES = {"official-sdk": "mcp", "fastmcp": "fastmcp", "mcp-use": "mcp-use"}


class PythonRuntime(Runtime):
    name = "python"
    source_suffixes = source.PY_SUFFIXES

    def install(self, work: Workdir) -> Installation:
        env = python_env.ensure_env(work)
        versions = {sdk: env.package_version(pkg) for sdk, pkg in PYTHON_SDK_PACKAGES.items()}
        how = "reused environment" if env.reused else ("private environment" if env.private else "new environment")
        mcp_version = versions["official-sdk"]
        detail = f"{env.declaration} -> {how} {env.root.name}" + (f" (mcp {mcp_version})" if mcp_version else "")
        return Installation(detail, [env.bin_dir], env.python, versions, runtime_roots=[env.root], box=env.box,
                            packages=dict(PYTHON_SDK_PACKAGES))

    def typecheck(self, work: Workdir, installation: Installation | None) -> list[str]:
        # Byte-compilation in memory with the grader's interpreter, which is the environment's (uv venv --python):
        # it executes nothing, and reads only the copy (no link in it leaves the workspace).
        files = self.source_files(work.copy)
        work.isolation["typecheck"] = "in-process byte-compilation of the copy (nothing of it runs)"
        if not files:
            return ["no .py source files in the workspace"]
        return source.compile_errors(work.copy, files)

    def default_start_command(self, installation: Installation, entry: Path) -> list[str]:
        return [str(installation.interpreter), str(entry)]

    def imported_modules(self, workspace: Path) -> set[str]:
        return source.python_imports(self.source_files(workspace))


RUNTIMES: dict[str, Runtime] = {"python": PythonRuntime(), "node": NodeRuntime()}


def runtime_for(name: str) -> Runtime:
    try:
        return RUNTIMES[name]
    except KeyError:
        raise KeyError(f"no {name!r} runtime in this grader (have: {', '.join(RUNTIMES)})") from None
