"""The SDK's latest release on its registry at batch time, so "a new release moved the pass rate" is one query.

Looked up once per package and batch (cached in the project cache for CACHE_TTL_S), recorded on every trial and in
the run manifest. Offline, or with `MCP_EVALS_SDK_REGISTRY=off`, it is None: a missing fact, never a guess.
The registry bases are overridable (`MCP_EVALS_NPM_REGISTRY`, `MCP_EVALS_PYPI_URL`), e.g. for a local mirror.
"""

from __future__ import annotations

import json
import os
import ssl
import time
import urllib.parse
from pathlib import Path

import httpx2 as httpx
from filelock import FileLock

from mcp_evals_pipeline.paths import cache_dir

CACHE_TTL_S = 6 * 3600
TIMEOUT_S = 10.0
NPM_DEFAULT = "https://registry.npmjs.org"
PYPI_DEFAULT = "https://pypi.org/pypi"


def _url(package: str, registry: str) -> str:
    if registry == "npm":
        base = os.environ.get("MCP_EVALS_NPM_REGISTRY", NPM_DEFAULT).rstrip("/")
        return f"{base}/{urllib.parse.quote(package, safe='@')}/latest"
    base = os.environ.get("MCP_EVALS_PYPI_URL", PYPI_DEFAULT).rstrip("/")
    return f"{base}/{urllib.parse.quote(package)}/json"


def _tls() -> ssl.SSLContext | bool:
    cafile = os.environ.get("SSL_CERT_FILE")
    return ssl.create_default_context(cafile=cafile) if cafile else True


def fetch_latest(package: str, registry: str) -> tuple[str | None, str]:
    """Ask the registry now, uncached: (the latest version, "") or (None, why it cannot be known). The release
    sensors poll with it; a sensor must say why it skipped, never crash on a registry that is down."""
    url = _url(package, registry)
    try:
        response = httpx.get(url, timeout=TIMEOUT_S, follow_redirects=True, verify=_tls())
        response.raise_for_status()
        data = response.json()
    except httpx.HTTPError as exc:
        return None, f"{url}: {type(exc).__name__}: {exc}"
    except ValueError as exc:
        return None, f"{url}: not JSON ({exc})"
    version = (data.get("version") if registry == "npm" else (data.get("info") or {}).get("version")) \
        if isinstance(data, dict) else None
    if not isinstance(version, str) or not version:
        field = "version" if registry == "npm" else "info.version"
        return None, f"{url}: no {field} in the answer"
    return version, ""


def _fetch(package: str, registry: str) -> str | None:
    return fetch_latest(package, registry)[0]


def _cache_file() -> Path:
    return cache_dir() / "sdk-registry-latest.json"


def _cached(package: str, registry: str, fresh: str | None = None) -> str | None:
    """The cached latest version (asking the registry when the entry is stale), or, given `fresh`, that version
    stored as the latest now."""
    path = _cache_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    key = f"{registry}:{package}:{_url(package, registry)}"
    with FileLock(str(path) + ".lock", timeout=60):
        try:
            cache = json.loads(path.read_text())
        except (OSError, ValueError):
            cache = {}
        hit = cache.get(key)
        if fresh is None and hit and time.time() - hit.get("at", 0) < CACHE_TTL_S and hit.get("version"):
            return str(hit["version"])
        version = fresh or _fetch(package, registry)
        if version is not None:
            cache[key] = {"version": version, "at": time.time()}
            path.write_text(json.dumps(cache, indent=1))
        return version


def latest_version(package: str, registry: str) -> str | None:
    """The registry's latest version of `package` (registry "npm" or "pypi"), None when it cannot be known."""
    if os.environ.get("MCP_EVALS_SDK_REGISTRY", "").lower() in ("off", "0", "false"):
        return None
    return _cached(package, registry)


def remember_latest(package: str, registry: str, version: str) -> None:
    """Store a version just read from the registry as its latest: a release sensor's batch then records the release
    it was launched for, not a cached answer from before the release."""
    _cached(package, registry, version)
