"""The grader's Node toolchain: pinned node, npm, TypeScript and tsx, installed once into the project cache.

The node runtime never uses whatever Node the host has for grading: a server that needs Node >= 22 (mcp-use 2.5
does) would otherwise pass on one machine and fail on another. The host's npm (any Node >= 18) only bootstraps
this directory: `npm install` of the pinned packages (the npm `node` package fetches the real binary), into a
directory keyed by the pins, built under a lock and published by an atomic rename, so concurrent graders build it
once and every later call costs a stat.

    python -m mcp_evals_pipeline.node_toolchain      # install (if needed) and print where it is
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from mcp_evals_pipeline import procs
from mcp_evals_pipeline.build_cache import cached_build
from mcp_evals_pipeline.paths import cache_dir

# Node 22 LTS (mcp-use 2.5 declares node >= 22.22.2). TypeScript 5.9 is the fallback `tsc` for workspaces that
# do not declare their own: the last release whose defaults (automatic @types inclusion, node10 resolution) the
# tsconfig files agents write still assume; TypeScript 6/7 changed them.
PINS: dict[str, str] = {
    "node": "22.23.3",
    "npm": "11.21.2",
    "typescript": "5.9.3",
    "tsx": "4.23.15",
    "@types/node": "22.20.7",
}
INSTALL_TIMEOUT_S = 600
# Settings of the host that installs need to reach the registry: certificates, proxies, a registry mirror.
NETWORK_SETTINGS = {"SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "HTTP_PROXY", "HTTPS_PROXY",
                    "ALL_PROXY", "NO_PROXY", "NPM_CONFIG_REGISTRY", "NPM_CONFIG_CAFILE", "NPM_CONFIG_PROXY",
                    "NPM_CONFIG_HTTPS_PROXY", "NPM_CONFIG_NOPROXY", "NPM_CONFIG_STRICT_SSL"}


class ToolchainError(Exception):
    """The toolchain could not be installed: always the host's problem (network, disk, no npm), never a trial's."""


@dataclass(frozen=True)
class Toolchain:
    root: Path

    @property
    def node_modules(self) -> Path:
        return self.root / "node_modules"

    @property
    def bin_dir(self) -> Path:
        """node, npm, npx, tsc, tsx: what goes first on a server's PATH."""
        return self.node_modules / ".bin"

    @property
    def node(self) -> Path:
        return self.node_modules / "node" / "bin" / "node"

    @property
    def npm_cli(self) -> Path:
        return self.node_modules / "npm" / "bin" / "npm-cli.js"

    @property
    def tsc(self) -> Path:
        return self.node_modules / "typescript" / "bin" / "tsc"

    @property
    def tsx_loader(self) -> Path:
        """`node --import <this> entry.ts` runs TypeScript in one process (the tsx CLI would add a parent)."""
        return self.node_modules / "tsx" / "dist" / "loader.mjs"

    @property
    def types_root(self) -> Path:
        return self.node_modules / "@types"

    @property
    def node_version(self) -> str:
        return PINS["node"]

    def npm(self, *args: str) -> list[str]:
        return [str(self.node), str(self.npm_cli), *args]


def toolchain_key() -> str:
    material = json.dumps(PINS, sort_keys=True) + platform.system() + platform.machine()
    return hashlib.sha256(material.encode()).hexdigest()[:12]


def npm_env(home: Path, path_prefix: list[Path] | None = None) -> dict[str, str]:
    """A clean environment for npm: no user npmrc (HOME is private), the shared download cache, and only the
    host's network settings."""
    return procs.sanitized_env(home=home, tmp=home, path_prefix=path_prefix, extra={
        "npm_config_cache": str(cache_dir() / "npm"),
        "npm_config_update_notifier": "false",
        "npm_config_fund": "false",
        "npm_config_audit": "false",
        "npm_config_progress": "false",
        **{k: v for k, v in os.environ.items() if k.upper() in NETWORK_SETTINGS},
    })


def _host_npm() -> tuple[str, str]:
    """The host's npm and the directory of the node it runs with (to bootstrap only)."""
    npm = shutil.which("npm")
    node = shutil.which("node")
    if npm is None or node is None:
        raise ToolchainError("the node toolchain needs a host npm to bootstrap it (install Node.js >= 18 and npm)")
    return npm, str(Path(node).parent)


def _build(target: Path) -> None:
    npm, host_node_dir = _host_npm()
    target.mkdir(parents=True)
    (target / "package.json").write_text(json.dumps(
        {"name": "mcp-evals-node-toolchain", "private": True, "dependencies": PINS}, indent=2) + "\n")
    home = target / ".home"
    home.mkdir()
    env = npm_env(home, [Path(host_node_dir)])
    cmd = [npm, "install", "--no-audit", "--no-fund", "--loglevel=error"]
    try:
        done = subprocess.run(cmd, cwd=target, env=env, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S,
                              check=False)
    except subprocess.TimeoutExpired as exc:
        raise ToolchainError(f"npm install of the node toolchain timed out after {INSTALL_TIMEOUT_S}s") from exc
    if done.returncode != 0:
        raise ToolchainError(f"npm install of the node toolchain failed: {(done.stderr or done.stdout)[-2000:]}")
    toolchain = Toolchain(target)
    try:
        version = subprocess.run([str(toolchain.node), "--version"], capture_output=True, text=True, timeout=30,
                                 check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        raise ToolchainError(f"the installed node does not run: {exc}") from exc
    if version != f"v{PINS['node']}":
        raise ToolchainError(f"the installed node is {version}, expected v{PINS['node']}")
    for path in (toolchain.npm_cli, toolchain.tsc, toolchain.tsx_loader, toolchain.types_root / "node"):
        if not path.exists():
            raise ToolchainError(f"the node toolchain lacks {path}")
    shutil.rmtree(home, ignore_errors=True)


def ensure_toolchain() -> Toolchain:
    """The pinned toolchain, installed on first use (idempotent, safe across processes); raises ToolchainError."""
    root, _ = cached_build(cache_dir() / "node-toolchain", toolchain_key(), _build, dated=False, sealed=False,
                           marker=json.dumps(PINS, sort_keys=True))
    return Toolchain(root)


def main() -> int:
    try:
        toolchain = ensure_toolchain()
    except ToolchainError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(toolchain.root)
    for name, version in PINS.items():
        print(f"  {name} {version}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
