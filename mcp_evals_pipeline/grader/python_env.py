"""The install stage of the python runtime: a workspace's declared dependencies in an environment of their own.

Installing runs agent-controlled code (a local package's build backend, a `setup.py`), so uv runs in an install
box (grader/boxes.py): only the grading's scratch writable, the registries through the egress allow-list, a
private uv cache. Environments live outside the workspace (the agent's own .venv is never trusted).

Shared environments. A declaration that names only registry packages (no local paths, no pip options, no dynamic
metadata) builds no code of the workspace: its environment is keyed by the declaration (with every file it
includes), the Python version and the UTC day, built into a staging directory and promoted, sealed, only after it
finished (build_cache.py); identical inputs reuse it for free, and unpinned requirements re-resolve daily so
a new SDK release reaches the next day's trials. Any other declaration gets a private environment in the
grading's scratch, removed with it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import re
import shutil
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from uv import find_uv_bin

from mcp_evals_pipeline import build_cache, procs
from mcp_evals_pipeline.grader.boxes import StepBox
from mcp_evals_pipeline.grader.install_failure import install_timeout_s, judge, note, python_index
from mcp_evals_pipeline.grader.scratch import Workdir
from mcp_evals_pipeline.paths import cache_dir

DECLARATIONS = ("requirements.txt", "pyproject.toml")
_LOCAL_REFERENCE = re.compile(r"(^\s*-e\b|^\s*\.|file:|(^|\s)\.{1,2}/|^\s*/|@\s*(git\+|https?:))",
                              re.MULTILINE)
# Any pip option but an include: --find-links, --index-url, --editable... (they can name local code or indexes)
_OPTION_LINE = re.compile(r"^\s*-(?!r\b|c\b|-requirement\b|-constraint\b)", re.MULTILINE)
_NETWORK_TROUBLE = ("dns error", "error sending request", "connection refused", "operation timed out",
                    "failed to fetch", "network is unreachable", "tls handshake")
_NETWORK_SETTINGS = {"SSL_CERT_FILE", "SSL_CERT_DIR", "UV_INDEX_URL", "UV_DEFAULT_INDEX", "UV_EXTRA_INDEX_URL",
                     "UV_INDEX"}


class InstallError(Exception):
    def __init__(self, detail: str, infra: bool):
        super().__init__(detail)
        self.detail = detail
        self.infra = infra


@dataclass(frozen=True)
class PythonEnv:
    root: Path
    reused: bool
    declaration: str
    private: bool  # True: built for this workspace only, in the grading's scratch
    box: str | None = None  # where it was built (None: reused, nothing ran)

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    @property
    def bin_dir(self) -> Path:
        return self.root / "bin"

    def package_version(self, distribution: str) -> str | None:
        normalized = distribution.replace("-", "_").lower()
        for site in self.root.glob("lib/python*/site-packages"):
            for info in site.glob("*.dist-info"):
                name, _, version = info.name[: -len(".dist-info")].partition("-")
                if name.replace("-", "_").lower() == normalized:
                    return version
        return None


def find_declaration(workspace: Path) -> Path | None:
    for name in DECLARATIONS:
        if (workspace / name).is_file():
            return workspace / name
    return None


def _validate_pyproject(path: Path) -> bool:
    """Raises InstallError for a pyproject.toml that declares nothing; returns whether it is shareable (static
    dependencies, no uv sources: reading it builds nothing)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InstallError(f"pyproject.toml does not parse: {exc}", infra=False) from exc
    project = data.get("project", {})
    deps = project.get("dependencies")
    dynamic = project.get("dynamic") or []
    if "dependencies" not in dynamic and (not isinstance(deps, list) or not deps):
        raise InstallError("pyproject.toml declares no [project] dependencies", infra=False)
    local = _LOCAL_REFERENCE.search("\n".join(str(d) for d in deps or []))
    return not dynamic and "sources" not in data.get("tool", {}).get("uv", {}) and not local


def _uv_env(uv_cache: Path) -> dict[str, str]:
    env = {
        "UV_CACHE_DIR": str(uv_cache),
        "UV_NO_CONFIG": "1",
        "UV_HTTP_TIMEOUT": "60",
        "UV_PYTHON_DOWNLOADS": "never",
        # The box trusts what the host trusts: its CA store (read-only /etc/ssl), not uv's bundled roots.
        "UV_NATIVE_TLS": "1",
    }
    # Only the host's network settings pass: certificates, an index mirror (the box brings its own proxy).
    env.update({k: v for k, v in os.environ.items() if k.upper() in _NETWORK_SETTINGS})
    return env


def _run_uv(box: StepBox, args: list[str], cwd: Path, env: dict[str, str], *, workspace_code: bool) -> None:
    """One uv step in the install box; `workspace_code`: the step may run the workspace's own code (it builds a
    local package or reads dynamic metadata). Whose failure it is: grader/install_failure.py."""
    timeout_s = install_timeout_s()
    done = box.run([str(_uv_bin()), *args], cwd=cwd, env=env, timeout_s=timeout_s)
    if done.returncode == 0:
        return
    message = done.output.strip()
    infra, evidence = judge(timed_out=done.timed_out, workspace_code=workspace_code, unreachable=done.unreachable,
                            network_hint=any(s in message.lower() for s in _NETWORK_TROUBLE),
                            registry=python_index())
    what = f"uv {' '.join(args[:2])} " + (f"timed out after {timeout_s:g}s" if done.timed_out else "failed")
    what += note(infra, evidence)
    raise InstallError(f"{what}: {message[-2000:]}" if message else what, infra=infra)


def _uv_bin() -> Path:
    return Path(find_uv_bin()).resolve()


def _base_python() -> Path:
    """The interpreter environments are made from: the harness's base interpreter (not its venv, in the checkout)."""
    return Path(sys.executable).resolve()


def _build(target: Path, declaration: Path, work: Workdir, *, workspace_code: bool) -> str:
    """Create the environment at target, in an install box (`workspace_code`: the declaration builds the
    workspace's own code); returns the box's description."""
    workspace, scratch = work.copy, work.scratch
    uv_cache = scratch / "uv-cache"  # private: no trial writes a cache another trial reads
    env = {**procs.sanitized_env(home=scratch / "home", tmp=scratch / "tmp"), **_uv_env(uv_cache)}
    box = StepBox(scratch, net="proxy", ro_paths=[_uv_bin(), Path(sys.base_prefix).resolve()], ro_binds=[])
    work.isolation["install"] = box.description
    try:
        # --relocatable: a staged environment keeps working after it is renamed to its key
        _run_uv(box, ["venv", "--quiet", "--relocatable", "--python", str(_base_python()), str(target)],
                workspace, env, workspace_code=False)
        _run_uv(box, ["pip", "install", "--quiet", "--compile-bytecode", "--python", str(target / "bin" / "python"),
                      "-r", str(declaration)], workspace, env, workspace_code=workspace_code)
    finally:
        box.close()
        shutil.rmtree(uv_cache, ignore_errors=True)
    return box.description


def ensure_env(work: Workdir, today: dt.date | None = None) -> PythonEnv:
    """Install the declared dependencies of the grading's copy (work.outside: the links the copy left out, see
    grader/scratch.py) in an install box; raises InstallError (contract or infra) or NoBox."""
    workspace, outside = work.copy, list(work.outside)
    declaration = find_declaration(workspace)
    if declaration is None:
        for name in DECLARATIONS:
            if name in outside:
                raise InstallError(f"{name} is a symlink to a path outside the workspace: refused (its target is "
                                   "never read)", infra=False)
        raise InstallError("no requirements.txt or pyproject.toml declares the dependencies", infra=False)
    if declaration.name == "pyproject.toml":
        files = [declaration]
        shareable = _validate_pyproject(declaration)
    else:
        files = requirement_files(declaration, workspace, outside)
        text = "\n".join(f.read_text(encoding="utf-8", errors="replace") for f in files)
        shareable = not _LOCAL_REFERENCE.search(text) and not _OPTION_LINE.search(text)

    if not shareable:  # the declaration builds local code: that code may touch its environment; never shared
        root = work.scratch / "env"
        box = _build(root, declaration, work, workspace_code=True)
        return PythonEnv(root, reused=False, declaration=declaration.name, private=True, box=box)

    parts = [declaration.name.encode(), *(f.relative_to(workspace).as_posix().encode() + b"\0" + f.read_bytes()
                                          for f in files), sys.version.encode(), build_cache.today_key(today).encode()]
    key = hashlib.sha256(b"\0".join(parts)).hexdigest()[:20]
    described: list[str] = []

    def build(stage: Path) -> None:
        # Registry packages only: no code of the workspace runs (a registry sdist's build does, not the agent's)
        described.append(_build(stage, declaration, work, workspace_code=False))

    root, reused = build_cache.cached_build(cache_dir() / "envs", key, build, stage=work.scratch / f"stage-{key}",
                                            today=today)
    return PythonEnv(root, reused=reused, declaration=declaration.name, private=False,
                     box=described[0] if described else None)


_INCLUDE = re.compile(r"^\s*(?:-r|--requirement|-c|--constraint)(?:\s*=\s*|\s+)(\S+)", re.MULTILINE)


def requirement_files(declaration: Path, workspace: Path, outside: list[str]) -> list[Path]:
    """The declaration and every file it includes (`-r`, `-c`), each checked to be the workspace's own before
    anything reads it: an include of a path outside the workspace (or of a link leaving it) is refused with the
    reason and without its content."""
    seen: list[Path] = []
    pending = [declaration]
    while pending:
        path = pending.pop()
        if path in seen:
            continue
        seen.append(path)
        rel = path.relative_to(workspace).as_posix()
        text = path.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            match = _INCLUDE.match(line)
            if not match:
                continue
            named = match.group(1)
            target = (path.parent / named)
            where = f"{rel} line {number} includes {named!r}"
            if named.startswith(("/", "~")) or "://" in named or not _inside(target, workspace):
                raise InstallError(f"{where}, a file outside the workspace: refused (it is never read)", infra=False)
            target_rel = Path(os.path.normpath(target)).relative_to(workspace).as_posix()
            if target_rel in outside:
                raise InstallError(f"{where}, a symlink to a path outside the workspace: refused (it is never read)",
                                   infra=False)
            if target.is_file():
                pending.append(Path(os.path.normpath(target)))
    return seen


def _inside(path: Path, workspace: Path) -> bool:
    return Path(os.path.normpath(path)).is_relative_to(workspace) and path.resolve().is_relative_to(workspace)
