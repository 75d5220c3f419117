"""The node runtime: install a workspace's package.json with npm, typecheck with tsc, start the entry with tsx.

Isolation. The graded workspace is never written to (the agent's own node_modules, if any, is never trusted
either). `install` makes a grader-private copy of the workspace (without node_modules and .git) under the cache,
and gives it a node_modules that is a hardlinked copy of a shared one; typecheck, build and the server run in that
copy (`Installation.run_dir`), and `Installation.close()` removes it.

Shared node_modules. Built with npm (`npm ci` when the workspace has package-lock.json / npm-shrinkwrap.json, else
`npm install`) from the dependency fields of package.json alone (the workspace's own lifecycle scripts never run),
keyed by those fields, the lockfile, the toolchain and the UTC day, like the python environments: identical
inputs give an identical tree, a warm install costs a hardlinked copy (~0.1 s), and unpinned ranges are
re-resolved daily. A manifest that points at local paths (`file:`, `link:`, `workspace:`, `./pkg`) or declares
npm workspaces cannot be keyed by content and is installed inside the private copy every time. npm's download
cache (`npm_config_cache`) is shared by every install.

Toolchain. node, npm, tsc and tsx are pinned (mcp_evals_pipeline/node_toolchain.py) and installed on first use;
the workspace's own TypeScript typechecks when it declares one.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from filelock import FileLock

from mcp_evals_pipeline.grader import source
from mcp_evals_pipeline.grader.python_env import InstallError
from mcp_evals_pipeline.grader.runtimes import Installation, Runtime
from mcp_evals_pipeline.node_toolchain import Toolchain, ToolchainError, ensure_toolchain, npm_env, toolchain_key
from mcp_evals_pipeline.paths import cache_dir

INSTALL_TIMEOUT_S = 600
TYPECHECK_TIMEOUT_S = 300
COMPLETE_MARKER = ".mcp-evals-complete"
LOCKFILES = ("npm-shrinkwrap.json", "package-lock.json")
# What of package.json decides the installed tree; the rest (scripts, name, main, type...) does not.
_DEPENDENCY_FIELDS = ("dependencies", "devDependencies", "optionalDependencies", "peerDependencies",
                      "peerDependenciesMeta", "overrides", "bundleDependencies", "bundledDependencies")
_DEPENDENCY_KINDS = ("dependencies", "devDependencies", "optionalDependencies")
_LOCAL_SPEC = re.compile(r"^(file:|link:|workspace:|portal:|\.{1,2}(/|$)|/|~/)")
# npm error codes that are the host's or the registry's trouble, not the workspace's.
_INFRA_CODES = {"ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "ESOCKETTIMEDOUT", "EPIPE",
                "ENETUNREACH", "EHOSTUNREACH", "ECONNABORTED", "ENOSPC", "EACCES", "EPERM", "EROFS", "EINTEGRITY",
                "E429", "E500", "E502", "E503", "E504", "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
                "SELF_SIGNED_CERT_IN_CHAIN", "CERT_HAS_EXPIRED"}
_NPM_NOISE = ("code ", "A complete log", "Note that you can also install", "tarball, folder, http url",
              "Log files were not written")
_NETWORK_TROUBLE = ("network request", "socket hang up", "getaddrinfo", "request to http")
_SDK_PACKAGES = {"mcp-use": "mcp-use", "official-sdk": "@modelcontextprotocol/sdk", "fastmcp": "fastmcp"}
_TS_SUFFIXES = (".ts", ".tsx", ".mts", ".cts")
_TSC_ERROR = re.compile(r"^(?:(?P<file>[^\s(][^(]*)\((?P<line>\d+),(?P<col>\d+)\): )?"
                        r"error (?P<code>TS\d+): (?P<msg>.*)$")
# Without an install (source-imports tasks) unresolved packages are expected; everything else still counts.
_UNRESOLVED_CODES = {"TS2307", "TS2792", "TS7016", "TS2875"}
DEFAULT_TSCONFIG = ".mcp-evals-tsconfig.json"
# Set for the server by the default start command: mcp-use reports usage to PostHog unless told not to, and a
# graded server has no business phoning home.


@dataclass
class NodeInstallation(Installation):
    """An installed node workspace. `workdir` is the grader-private copy (with node_modules) that typecheck and
    the server run in; commands meant to run "from the workspace root" belong there too."""

    workspace: Path = field(default_factory=Path)
    workdir: Path = field(default_factory=Path)
    toolchain: Toolchain | None = None
    declares_typescript: bool = False
    timings: dict[str, float] = field(default_factory=dict)


# ---- package.json ------------------------------------------------------------------------------------------------


def read_manifest(workspace: Path) -> dict[str, Any]:
    path = workspace / "package.json"
    if not path.is_file():
        raise InstallError("no package.json declares the dependencies", infra=False)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InstallError(f"package.json does not parse: {exc}", infra=False) from exc
    if not isinstance(data, dict):
        raise InstallError("package.json is not a JSON object", infra=False)
    for kind in (*_DEPENDENCY_KINDS, "peerDependencies", "overrides"):
        if kind in data and not isinstance(data[kind], dict):
            raise InstallError(f"package.json: {kind!r} is not an object", infra=False)
    return data


def _declared(manifest: dict[str, Any]) -> dict[str, str]:
    specs: dict[str, str] = {}
    for kind in _DEPENDENCY_KINDS:
        deps = manifest.get(kind)
        if isinstance(deps, dict):
            specs.update({str(k): str(v) for k, v in deps.items()})
    return specs


def needs_private_install(manifest: dict[str, Any]) -> bool:
    """Local references and npm workspaces need the workspace's files: they cannot share a node_modules."""
    return "workspaces" in manifest or any(_LOCAL_SPEC.match(spec.strip()) for spec in _declared(manifest).values())


def find_lockfile(workspace: Path) -> Path | None:
    for name in LOCKFILES:
        if (workspace / name).is_file():
            return workspace / name
    return None


def _reduced_manifest(manifest: dict[str, Any]) -> dict[str, Any]:
    reduced: dict[str, Any] = {"name": "mcp-evals-workspace", "version": "0.0.0", "private": True}
    # npm ci checks the lockfile's root entry against package.json: keep the names it records.
    for key in ("name", "version"):
        if isinstance(manifest.get(key), str):
            reduced[key] = manifest[key]
    reduced.update({k: manifest[k] for k in _DEPENDENCY_FIELDS if k in manifest})
    return reduced


# ---- npm -----------------------------------------------------------------------------------------------------------


def _npm_failure(args: list[str], output: str) -> InstallError:
    codes = re.findall(r"npm (?:error|ERR!) code (\S+)", output)
    lines = []
    for raw in output.splitlines():
        # "npm error 404  The requested resource ..." -> "The requested resource ..."
        line = re.sub(r"^npm (?:error|ERR!)(\s+\d{3}(?=\s|$))?", "", raw).strip()
        if line.startswith(("Clean install a project", "Usage:")):
            break  # npm ci's usage text follows
        if not raw.startswith(("npm error", "npm ERR!")) or not line or line.startswith(_NPM_NOISE):
            continue
        if line not in lines:
            lines.append(line)
    message = "; ".join(lines) or output.strip()[-1500:]
    infra = bool(set(codes) & _INFRA_CODES) or any(s in output.lower() for s in _NETWORK_TROUBLE)
    code = f" ({codes[0]})" if codes else ""
    return InstallError(f"npm {args[0]} failed{code}: {message[:2000]}", infra=infra)


def run_npm(toolchain: Toolchain, args: list[str], cwd: Path, home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    env = npm_env(home, [toolchain.bin_dir])
    cmd = toolchain.npm(*args, "--no-audit", "--no-fund", "--loglevel=error", "--include=dev")
    try:
        done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S,
                              check=False)
    except subprocess.TimeoutExpired as exc:
        raise InstallError(f"npm {args[0]} timed out after {INSTALL_TIMEOUT_S}s", infra=True) from exc
    if done.returncode != 0:
        raise _npm_failure(args, done.stderr + "\n" + done.stdout)


def _npm_command(lockfile: Path | None) -> list[str]:
    return ["ci"] if lockfile is not None else ["install"]


def _build_modules(root: Path, manifest: dict[str, Any], lockfile: Path | None, toolchain: Toolchain) -> None:
    root.mkdir(parents=True)
    (root / "package.json").write_text(json.dumps(_reduced_manifest(manifest), indent=2) + "\n")
    if lockfile is not None:
        shutil.copyfile(lockfile, root / lockfile.name)
    run_npm(toolchain, _npm_command(lockfile), root, root / ".home")
    shutil.rmtree(root / ".home", ignore_errors=True)
    (root / "node_modules").mkdir(exist_ok=True)  # a manifest without dependencies installs nothing


def ensure_modules(manifest: dict[str, Any], lockfile: Path | None, toolchain: Toolchain,
                   today: dt.date | None = None) -> tuple[Path, bool]:
    """The shared node_modules of this dependency set (built if needed) and whether it was reused."""
    envs = cache_dir() / "node-envs"
    envs.mkdir(parents=True, exist_ok=True)
    day = (today or dt.datetime.now(dt.UTC).date()).isoformat()
    declared = json.dumps({k: manifest[k] for k in _DEPENDENCY_FIELDS if k in manifest}, sort_keys=True)
    parts = [declared.encode(), (lockfile.name.encode() if lockfile else b""),
             (lockfile.read_bytes() if lockfile else b""), toolchain_key().encode(), day.encode()]
    root = envs / hashlib.sha256(b"\0".join(parts)).hexdigest()[:20]
    with FileLock(str(root) + ".lock"):
        if (root / COMPLETE_MARKER).exists():
            return root / "node_modules", True
        shutil.rmtree(root, ignore_errors=True)
        try:
            _build_modules(root, manifest, lockfile, toolchain)
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise
        (root / COMPLETE_MARKER).write_text(day + "\n")
    _prune_stale(envs, keep_days=2)
    return root / "node_modules", False


def _prune_stale(envs: Path, keep_days: int) -> None:
    cutoff = (dt.datetime.now(dt.UTC).date() - dt.timedelta(days=keep_days)).isoformat()
    for marker in envs.glob(f"*/{COMPLETE_MARKER}"):
        try:
            built = marker.read_text().strip()
        except OSError:
            continue
        if built < cutoff:
            shutil.rmtree(marker.parent, ignore_errors=True)


def _prune_private(base: Path, max_age_s: float = 86_400) -> None:
    """Private copies a killed grader left behind."""
    now = time.time()
    for entry in base.glob("grade-*"):
        try:
            if now - entry.stat().st_mtime > max_age_s:
                shutil.rmtree(entry, ignore_errors=True)
        except OSError:
            continue


# ---- copies --------------------------------------------------------------------------------------------------------


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def link_tree(src: Path, dst: Path) -> None:
    """A hardlinked copy of src (files shared, directories private; symlinks kept as symlinks)."""
    shutil.copytree(src, dst, symlinks=True, copy_function=_link_or_copy)


def copy_workspace(workspace: Path, dst: Path) -> None:
    shutil.copytree(workspace, dst, symlinks=True, ignore=shutil.ignore_patterns("node_modules", ".git"))


def package_version(node_modules: Path, name: str) -> str | None:
    try:
        version = json.loads((node_modules / name / "package.json").read_text(encoding="utf-8")).get("version")
    except (OSError, ValueError, AttributeError):
        return None
    return version if isinstance(version, str) else None


# ---- typecheck -----------------------------------------------------------------------------------------------------


def default_tsconfig(files: list[str], type_roots: list[Path]) -> dict[str, Any]:
    """What a workspace without tsconfig.json is checked with: modern ESM, lenient (no strict), libraries unchecked,
    extensionless relative imports allowed (tsx runs them), Node's types available."""
    return {
        "compilerOptions": {
            "target": "ES2022",
            "module": "ESNext",
            "moduleResolution": "Bundler",
            "strict": False,
            "skipLibCheck": True,
            "noEmit": True,
            "allowJs": True,
            "checkJs": False,
            "esModuleInterop": True,
            "resolveJsonModule": True,
            "allowImportingTsExtensions": True,
            "jsx": "react-jsx",
            "types": ["node"],
            "typeRoots": [str(p) for p in type_roots],
        },
        "files": files,
    }


def parse_tsc_output(output: str, ignore: set[str] | None = None) -> list[str]:
    problems = []
    for line in output.splitlines():
        match = _TSC_ERROR.match(line.strip())
        if not match or match["code"] in (ignore or set()):
            continue
        where = f"{match['file']}:{match['line']}: " if match["file"] else ""
        problems.append(f"{where}{match['code']} {match['msg']}")
    return problems


def run_tsc(toolchain: Toolchain, tsc: Path, project: Path, config: Path, ignore: set[str] | None = None) -> list[str]:
    (cache_dir() / "scratch").mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="tsc-home-", dir=cache_dir() / "scratch"))
    env = npm_env(home, [toolchain.bin_dir])
    cmd = [str(toolchain.node), str(tsc), "--noEmit", "--pretty", "false", "-p", str(config)]
    try:
        done = subprocess.run(cmd, cwd=project, env=env, capture_output=True, text=True,
                              timeout=TYPECHECK_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return [f"tsc did not finish within {TYPECHECK_TIMEOUT_S}s"]
    finally:
        shutil.rmtree(home, ignore_errors=True)
    output = done.stdout + "\n" + done.stderr
    problems = parse_tsc_output(output, ignore)
    if done.returncode != 0 and not problems and not ignore:
        return [f"tsc exited {done.returncode}: {output.strip()[-800:]}"]
    return problems


# ---- the runtime ---------------------------------------------------------------------------------------------------


class NodeRuntime(Runtime):
    name = "node"
    source_suffixes = source.JS_SUFFIXES

    def install(self, workspace: Path) -> Installation:
        started = time.perf_counter()
        manifest = read_manifest(workspace)
        try:
            toolchain = ensure_toolchain()
        except ToolchainError as exc:
            raise InstallError(str(exc), infra=True) from exc
        lockfile = find_lockfile(workspace)
        base = cache_dir() / "node-work"
        base.mkdir(parents=True, exist_ok=True)
        _prune_private(base)
        private = Path(tempfile.mkdtemp(prefix="grade-", dir=base))
        workdir = private / "workspace"
        timings: dict[str, float] = {}
        try:
            copy_workspace(workspace, workdir)
            how = " ".join(["npm", *_npm_command(lockfile)])
            if needs_private_install(manifest):
                run_npm(toolchain, _npm_command(lockfile), workdir, private / "home")
                how += ": private node_modules (local references)"
            else:
                t = time.perf_counter()
                modules, reused = ensure_modules(manifest, lockfile, toolchain)
                timings["modules_s"] = time.perf_counter() - t
                t = time.perf_counter()
                link_tree(modules, workdir / "node_modules")
                timings["link_s"] = time.perf_counter() - t
                how += f": {'reused' if reused else 'new'} node_modules {modules.parent.name}"
        except BaseException:
            shutil.rmtree(private, ignore_errors=True)
            raise
        node_modules = workdir / "node_modules"
        versions = {sdk: package_version(node_modules, pkg) for sdk, pkg in _SDK_PACKAGES.items()}
        sdk = next(((p, v) for p, v in ((p, versions[s]) for s, p in _SDK_PACKAGES.items()) if v), None)
        declaration = "package.json" + (f" + {lockfile.name}" if lockfile else "")
        detail = f"{declaration} -> {how}, node {toolchain.node_version}" + (f" ({sdk[0]} {sdk[1]})" if sdk else "")
        timings["install_s"] = time.perf_counter() - started
        return NodeInstallation(
            detail=detail,
            path_prefix=[node_modules / ".bin", toolchain.bin_dir],
            interpreter=toolchain.node,
            versions=versions,
            private_root=private,
            run_dir=workdir,
            workspace=workspace,
            workdir=workdir,
            toolchain=toolchain,
            declares_typescript="typescript" in _declared(manifest),
            timings=timings,
        )

    def typecheck(self, workspace: Path, installation: Installation | None) -> list[str]:
        files = self.source_files(workspace)
        if not files:
            return ["no TypeScript or JavaScript source files in the workspace"]
        rel = [f.relative_to(workspace).as_posix() for f in files]
        if not isinstance(installation, NodeInstallation) or installation.toolchain is None:
            return self._typecheck_uninstalled(workspace, files)
        toolchain, workdir = installation.toolchain, installation.workdir
        own_tsc = workdir / "node_modules" / "typescript" / "bin" / "tsc"
        tsc = own_tsc if installation.declares_typescript and own_tsc.is_file() else toolchain.tsc
        if (workdir / "tsconfig.json").is_file():
            problems = run_tsc(toolchain, tsc, workdir, workdir / "tsconfig.json")
            # A tsconfig whose include matches none of the files (a JS workspace): check them with the defaults.
            if not any(p.startswith("TS18003") for p in problems):
                return problems
        config = workdir / DEFAULT_TSCONFIG
        roots = [workdir / "node_modules" / "@types", toolchain.types_root]
        config.write_text(json.dumps(default_tsconfig(rel, roots), indent=2))
        return run_tsc(toolchain, tsc, workdir, config)

    def _typecheck_uninstalled(self, workspace: Path, files: list[Path]) -> list[str]:
        """Source-imports tasks have no install: check with the pinned tsc, packages unresolved (their types are
        `any`), from a config outside the workspace."""
        try:
            toolchain = ensure_toolchain()
        except ToolchainError as exc:
            raise InstallError(str(exc), infra=True) from exc
        (cache_dir() / "scratch").mkdir(parents=True, exist_ok=True)
        project = Path(tempfile.mkdtemp(prefix="tsc-", dir=cache_dir() / "scratch"))
        try:
            config = project / "tsconfig.json"
            config.write_text(json.dumps(default_tsconfig([str(f) for f in files], [toolchain.types_root])))
            # From the workspace, so tsc names files relative to it (it writes nothing: noEmit, no incremental).
            return run_tsc(toolchain, toolchain.tsc, workspace, config, ignore=_UNRESOLVED_CODES)
        finally:
            shutil.rmtree(project, ignore_errors=True)

    def default_start_command(self, installation: Installation, entry: Path) -> list[str]:
        """`tsx <entry>` (tsx's loader in the pinned node, one process) for TypeScript, `node <entry>` for
        JavaScript; the grader runs it in the private copy (`Installation.run_dir`)."""
        assert isinstance(installation, NodeInstallation) and installation.toolchain is not None
        toolchain = installation.toolchain
        rel = entry.relative_to(installation.workspace).as_posix()
        runner = [str(toolchain.node)]
        if entry.suffix in _TS_SUFFIXES:
            runner += ["--import", toolchain.tsx_loader.as_uri()]
        return [*runner, rel]

    def imported_modules(self, workspace: Path) -> set[str]:
        return source.js_imports(self.source_files(workspace))
