"""The install stage of the python runtime: a workspace's declared dependencies in an environment of their own.

Environments live outside the workspace (the agent's own .venv, if any, is never trusted) and are built with uv
from a shared download cache. An environment is reused for an identical dependency declaration on the same UTC
day: identical inputs give an identical environment, a warm install costs nothing, and unpinned requirements
are re-resolved daily so a new SDK release reaches the next day's trials. Declarations that point at local paths
(`-e .`, `./pkg`, `file:`) cannot be keyed by content and get a private environment every time.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock
from uv import find_uv_bin

from mcp_evals_pipeline.paths import cache_dir

INSTALL_TIMEOUT_S = 600
_LOCAL_REFERENCE = re.compile(r"(^\s*-e\b|^\s*\.|file:|(^|\s)\.{1,2}/|^\s*/)", re.MULTILINE)
_NETWORK_TROUBLE = ("dns error", "error sending request", "connection refused", "operation timed out",
                    "failed to fetch", "network is unreachable", "tls handshake")
COMPLETE_MARKER = ".mcp-evals-complete"
_NETWORK_SETTINGS = {"SSL_CERT_FILE", "SSL_CERT_DIR", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY",
                     "UV_INDEX_URL", "UV_DEFAULT_INDEX", "UV_EXTRA_INDEX_URL", "UV_INDEX", "UV_NATIVE_TLS"}


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
    private: bool  # True: built for this workspace only; the caller removes it

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
    for name in ("requirements.txt", "pyproject.toml"):
        if (workspace / name).is_file():
            return workspace / name
    return None


def _validate_pyproject(path: Path) -> None:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InstallError(f"pyproject.toml does not parse: {exc}", infra=False) from exc
    deps = data.get("project", {}).get("dependencies")
    if not isinstance(deps, list) or not deps:
        raise InstallError("pyproject.toml declares no [project] dependencies", infra=False)


def _run_uv(args: list[str], cwd: Path, uv_cache: Path) -> None:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "UV_CACHE_DIR": str(uv_cache),
        "UV_NO_CONFIG": "1",
        "UV_HTTP_TIMEOUT": "60",
    }
    # Only the host's network settings pass: certificates, proxies and an index mirror.
    env.update({k: v for k, v in os.environ.items() if k.upper() in _NETWORK_SETTINGS})
    try:
        proc = subprocess.run([find_uv_bin(), *args], cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=INSTALL_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired as exc:
        raise InstallError(f"uv {args[0]} timed out after {INSTALL_TIMEOUT_S}s", infra=True) from exc
    if proc.returncode != 0:
        message = (proc.stderr or proc.stdout).strip()
        infra = any(s in message.lower() for s in _NETWORK_TROUBLE)
        raise InstallError(f"uv {' '.join(args[:2])} failed: {message[-2000:]}", infra=infra)


def _build(root: Path, declaration: Path, workspace: Path, uv_cache: Path) -> None:
    _run_uv(["venv", "--quiet", "--python", sys.executable, str(root)], workspace, uv_cache)
    _run_uv(["pip", "install", "--quiet", "--compile-bytecode", "--python", str(root / "bin" / "python"),
             "-r", str(declaration)], workspace, uv_cache)


def ensure_env(workspace: Path, today: dt.date | None = None) -> PythonEnv:
    """Install the workspace's declared dependencies; raises InstallError (contract or infra)."""
    declaration = find_declaration(workspace)
    if declaration is None:
        raise InstallError("no requirements.txt or pyproject.toml declares the dependencies", infra=False)
    if declaration.name == "pyproject.toml":
        _validate_pyproject(declaration)
    content = declaration.read_bytes()
    uv_cache = cache_dir() / "uv"
    envs = cache_dir() / "envs"
    envs.mkdir(parents=True, exist_ok=True)

    if _LOCAL_REFERENCE.search(content.decode("utf-8", errors="replace")):
        root = Path(tempfile.mkdtemp(prefix="private-", dir=envs))
        shutil.rmtree(root)
        try:
            _build(root, declaration, workspace, uv_cache)
        except InstallError:
            shutil.rmtree(root, ignore_errors=True)
            raise
        return PythonEnv(root, reused=False, declaration=declaration.name, private=True)

    day = (today or dt.datetime.now(dt.UTC).date()).isoformat()
    key = hashlib.sha256(b"\0".join([declaration.name.encode(), content, sys.version.encode(), day.encode()]))
    root = envs / key.hexdigest()[:20]
    with FileLock(str(root) + ".lock"):
        if (root / COMPLETE_MARKER).exists():
            return PythonEnv(root, reused=True, declaration=declaration.name, private=False)
        shutil.rmtree(root, ignore_errors=True)
        try:
            _build(root, declaration, workspace, uv_cache)
        except InstallError:
            shutil.rmtree(root, ignore_errors=True)
            raise
        (root / COMPLETE_MARKER).write_text(day + "\n")
    _prune_stale(envs, keep_days=2)
    return PythonEnv(root, reused=False, declaration=declaration.name, private=False)


def _prune_stale(envs: Path, keep_days: int) -> None:
    """Drop shared environments built more than keep_days ago (a grade still using one started days ago)."""
    cutoff = (dt.datetime.now(dt.UTC).date() - dt.timedelta(days=keep_days)).isoformat()
    for marker in envs.glob(f"*/{COMPLETE_MARKER}"):
        try:
            built = marker.read_text().strip()
        except OSError:
            continue
        if built < cutoff:
            shutil.rmtree(marker.parent, ignore_errors=True)
