"""What every runtime provides (the seam of grader/runtimes.py), apart so each runtime module imports it alone."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path

from mcp_evals_pipeline.contracts.grade import SdkPath
from mcp_evals_pipeline.grader import source
from mcp_evals_pipeline.grader.scratch import Workdir

__all__ = ["Installation", "Runtime"]


@dataclass
class Installation:
    """An installed workspace: where its executables are and what got installed."""

    detail: str
    path_prefix: list[Path]
    interpreter: Path
    versions: dict[str, str | None]  # sdkPath -> installed version of that SDK
    # What the runtime reads, mounted read-only in every later box: its environment or toolchain ...
    runtime_roots: list[Path] = field(default_factory=list)
    # ... and (host path, path in the copy) read-only binds, e.g. a shared node_modules over <copy>/node_modules.
    ro_binds: list[tuple[Path, Path]] = field(default_factory=list)
    box: str | None = None  # the install box's description (None: a reused build, no code ran)
    packages: dict[str, str] = field(default_factory=dict)  # sdkPath -> the package name its version is of

    def _sdk(self, sdk_path: SdkPath) -> str:
        return sdk_path if self.versions.get(sdk_path) else "official-sdk"

    def sdk_version(self, sdk_path: SdkPath) -> str | None:
        return self.versions.get(self._sdk(sdk_path))

    def sdk_package(self, sdk_path: SdkPath) -> str | None:
        sdk = self._sdk(sdk_path)
        return self.packages.get(sdk) if self.versions.get(sdk) else None


class Runtime(ABC):
    name: str
    source_suffixes: tuple[str, ...]

    def source_files(self, workspace: Path) -> list[Path]:
        return source.source_files(workspace, self.source_suffixes)

    @abstractmethod
    def install(self, work: Workdir) -> Installation:
        """Blocking, in an install box; raises InstallError (or boxes.NoBox)."""

    @abstractmethod
    def typecheck(self, work: Workdir, installation: Installation | None) -> list[str]:
        """One line per problem; empty when the workspace typechecks (source-imports tasks have no install).
        Whatever it runs runs in a box (recorded in work.isolation["typecheck"])."""

    @abstractmethod
    def default_start_command(self, installation: Installation, entry: Path) -> list[str]: ...

    @abstractmethod
    def imported_modules(self, workspace: Path) -> set[str]: ...
