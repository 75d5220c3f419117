"""The node runtime: install a workspace's package.json with npm, typecheck with tsc, start the entry with tsx.

Isolation. Everything runs on the grading's private copy of the workspace (grader/scratch.py; the agent's own
node_modules is never copied nor trusted), and npm and tsc run in boxes (grader/boxes.py): npm in an install box
(registries through the egress allow-list, a private download cache), tsc in one without network.

Shared node_modules. Built with npm (`npm ci` when the workspace has package-lock.json / npm-shrinkwrap.json, else
`npm install`) from the dependency fields of package.json alone (the workspace's own lifecycle scripts never run
there: the reduced manifest has no `scripts`), keyed by those fields, the lockfile, the toolchain and the UTC day,
like the python environments: built into a staging directory, sealed and promoted only after it finished
(build_cache.py), then bound read-only over <copy>/node_modules in every box and in the server's (a warm
install costs nothing), and unpinned ranges are re-resolved daily. A manifest that points at local paths (`file:`,
`link:`, `workspace:`, `./pkg`) or declares npm workspaces is installed as is, lifecycle scripts included, inside
the copy in the install box, every time.

Toolchain. node, npm, tsc and tsx are pinned (mcp_evals_pipeline/node_toolchain.py) and installed on first use;
the workspace's own TypeScript typechecks when it declares one (with the grader's defaults, DEFAULT_COMPILER_OPTIONS,
when it has no tsconfig.json: only a TypeScript >= 5.0 understands them, so an older one leaves them to the
grader's). Over a shared set the typecheck runs on a long-lived compiler (tsc_workers.py), the one-shot tsc being
the fallback and the only one for TypeScript >= 7 (native, without the JavaScript API a worker keeps).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import shutil
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_evals_pipeline import build_cache
from mcp_evals_pipeline.grader import source, tsc_cache, tsc_workers
from mcp_evals_pipeline.grader.boxes import StepBox
from mcp_evals_pipeline.grader.install_failure import install_timeout_s, judge, note, npm_registry
from mcp_evals_pipeline.grader.python_env import InstallError
from mcp_evals_pipeline.grader.runtime_base import Installation, Runtime
from mcp_evals_pipeline.grader.scratch import Workdir
from mcp_evals_pipeline.node_toolchain import Toolchain, ToolchainError, ensure_toolchain, npm_env, toolchain_key
from mcp_evals_pipeline.paths import cache_dir

TYPECHECK_TIMEOUT_S = 300
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
# sdkPath -> the packages that are it, in the order they are looked for (the official SDK v1 is one package; v2
# splits into @modelcontextprotocol/server and /client).
_SDK_PACKAGES: dict[str, tuple[str, ...]] = {
    "mcp-use": ("mcp-use",),
    "official-sdk": ("@modelcontextprotocol/sdk", "@modelcontextprotocol/server"),
    "fastmcp": ("fastmcp",),
}
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
    """An installed node workspace: `workdir` is the grading's copy, `node_modules` where its packages really are
    (the copy's own for a private install, else a shared one, bound over <workdir>/node_modules in the boxes)."""

    workdir: Path = field(default_factory=Path)
    node_modules: Path = field(default_factory=Path)
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


def _npm_failure(args: list[str], output: str, *, unreachable: list[str], workspace_code: bool) -> InstallError:
    """What npm says went wrong, and whose failure it is (grader/install_failure.py): the error codes and words
    npm prints are in the same stream as the lifecycle scripts' output, so they only ever prompt a probe."""
    codes = re.findall(r"npm (?:error|ERR!) code (\S+)", output)
    lines = []
    script_output = []  # a failing lifecycle script's own lines: what its author needs to see
    for raw in output.splitlines():
        if raw.strip() and not raw.startswith(("npm ", ">")):
            script_output.append(raw.strip())
        # "npm error 404  The requested resource ..." -> "The requested resource ..."
        line = re.sub(r"^npm (?:error|ERR!)(\s+\d{3}(?=\s|$))?", "", raw).strip()
        if line.startswith(("Clean install a project", "Usage:")):
            break  # npm ci's usage text follows
        if not raw.startswith(("npm error", "npm ERR!")) or not line or line.startswith(_NPM_NOISE):
            continue
        if line not in lines:
            lines.append(line)
    message = "; ".join(lines) or output.strip()[-1500:]
    if script_output and any(line.startswith("command sh -c") for line in lines):
        message += " | script output: " + " / ".join(script_output)[-1000:]
    hint = bool(set(codes) & _INFRA_CODES) or any(s in output.lower() for s in _NETWORK_TROUBLE)
    infra, evidence = judge(timed_out=False, workspace_code=workspace_code, unreachable=unreachable,
                            network_hint=hint, registry=npm_registry())
    code = f" ({codes[0]})" if codes else ""
    return InstallError(f"npm {args[0]} failed{code}{note(infra, evidence)}: {message[:2000]}", infra=infra)


def run_npm(toolchain: Toolchain, args: list[str], cwd: Path, work: Workdir, *, workspace_code: bool) -> str:
    """npm in an install box (its own download cache in the scratch); returns the box's description.
    `workspace_code`: the manifest is installed as is, so its own lifecycle scripts run."""
    scratch = work.scratch
    env = {**npm_env(scratch / "home", [toolchain.bin_dir]), "npm_config_cache": str(scratch / "npm-cache")}
    cmd = toolchain.npm(*args, "--no-audit", "--no-fund", "--loglevel=error", "--include=dev")
    timeout_s = install_timeout_s()
    box = StepBox(scratch, net="proxy", ro_paths=[toolchain.root], ro_binds=[])
    work.isolation["install"] = box.description
    try:
        done = box.run(cmd, cwd=cwd, env=env, timeout_s=timeout_s)
    finally:
        box.close()
        shutil.rmtree(scratch / "npm-cache", ignore_errors=True)
    if done.timed_out:
        infra, evidence = judge(timed_out=True, workspace_code=workspace_code, unreachable=done.unreachable,
                                network_hint=False, registry=npm_registry())
        raise InstallError(f"npm {args[0]} timed out after {timeout_s:g}s{note(infra, evidence)}: "
                           f"{done.output.strip()[-1500:]}", infra=infra)
    if done.returncode != 0:
        raise _npm_failure(args, done.output, unreachable=done.unreachable, workspace_code=workspace_code)
    return box.description


def _npm_command(lockfile: Path | None) -> list[str]:
    return ["ci"] if lockfile is not None else ["install"]


def _build_modules(root: Path, manifest: dict[str, Any], lockfile: Path | None, toolchain: Toolchain,
                   work: Workdir) -> str:
    root.mkdir(parents=True)
    (root / "package.json").write_text(json.dumps(_reduced_manifest(manifest), indent=2) + "\n")
    if lockfile is not None:
        shutil.copyfile(lockfile, root / lockfile.name)
    # The reduced manifest has no scripts: no code of the workspace runs (the dependencies' own scripts may)
    box = run_npm(toolchain, _npm_command(lockfile), root, work, workspace_code=False)
    (root / "node_modules").mkdir(exist_ok=True)  # a manifest without dependencies installs nothing
    return box


def ensure_modules(manifest: dict[str, Any], lockfile: Path | None, toolchain: Toolchain, work: Workdir,
                   today: dt.date | None = None) -> tuple[Path, bool, str | None]:
    """The shared node_modules of this dependency set (built if needed in an install box), whether it was
    reused, and the box it was built in."""
    declared = json.dumps({k: manifest[k] for k in _DEPENDENCY_FIELDS if k in manifest}, sort_keys=True)
    parts = [declared.encode(), (lockfile.name.encode() if lockfile else b""),
             (lockfile.read_bytes() if lockfile else b""), toolchain_key().encode(),
             build_cache.today_key(today).encode()]
    key = hashlib.sha256(b"\0".join(parts)).hexdigest()[:20]
    described: list[str] = []

    def build(stage: Path) -> None:
        described.append(_build_modules(stage, manifest, lockfile, toolchain, work))

    root, reused = build_cache.cached_build(cache_dir() / "node-envs", key, build,
                                            stage=work.scratch / f"stage-{key}", today=today)
    return root / "node_modules", reused, described[0] if described else None


def package_version(node_modules: Path, name: str) -> str | None:
    try:
        version = json.loads((node_modules / name / "package.json").read_text(encoding="utf-8")).get("version")
    except (OSError, ValueError, AttributeError):
        return None
    return version if isinstance(version, str) else None


# ---- typecheck -----------------------------------------------------------------------------------------------------


# What a workspace without tsconfig.json is typechecked with (docs/task-authoring.md, "Typecheck defaults", states
# them): lenient (no strict), libraries unchecked, ESM with top-level await, package `exports` and extensionless
# relative imports resolved as a bundler or tsx does, the newest built-ins Node has (and the DOM's, as TypeScript 5's
# default lib has), JavaScript allowed and syntax-checked only. Every option is set, so none is the compiler's own
# default: TypeScript 6 and 7 changed those (strict on, `types` [], side-effect imports checked) and the defaults
# must mean the same whatever TypeScript checks them. `types` and `typeRoots` are set per grading
# (default_tsconfig). TypeScript >= 5.0 understands all of it (Bundler resolution, allowImportingTsExtensions).
DEFAULT_COMPILER_OPTIONS: dict[str, Any] = {
    "target": "ES2022",
    "lib": ["ESNext", "DOM", "DOM.Iterable"],
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
}
# Options a newer TypeScript defaults otherwise than 5.0 did, with the version that knows them (an older one
# rejects an option it does not know, and already behaves as the value says).
DEFAULT_OPTIONS_SINCE: tuple[tuple[tuple[int, int], str, Any], ...] = (
    ((5, 6), "noUncheckedSideEffectImports", False),  # TypeScript >= 6 fails `import "./style.css"` otherwise
)
DEFAULTS_NEED_TYPESCRIPT = (5, 0)  # a workspace's own older TypeScript does not check the defaults: the grader's does


def global_types(installed: Path | None) -> list[str]:
    """`types` of the defaults: Node's (`process`, `Buffer`: the grader's @types/node when the workspace has none)
    and every other @types package the workspace installed (`installed`: its node_modules/@types), as TypeScript
    5 includes them by default (6 and 7 include none)."""
    names = {"node"}
    if installed is not None and installed.is_dir():
        names.update(d.name for d in installed.iterdir() if _declares_types(d))
    return sorted(names)


def _declares_types(package: Path) -> bool:
    if (package / "index.d.ts").is_file():
        return True
    try:
        manifest = json.loads((package / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(manifest, dict) and bool(manifest.get("types") or manifest.get("typings"))


def default_tsconfig(files: list[str], ts_version: str | None, grader_types: Path,
                     installed: Path | None = None) -> dict[str, Any]:
    """The tsconfig a workspace without one is checked with (DEFAULT_COMPILER_OPTIONS) by the TypeScript
    `ts_version`, written at the root of the copy. Its types come from the workspace's installed node_modules/@types
    (`installed`, named relative to the config: the worker's copy sits at another path), then the grader's."""
    options = dict(DEFAULT_COMPILER_OPTIONS)
    options.update({name: value for since, name, value in DEFAULT_OPTIONS_SINCE if _at_least(ts_version, since)})
    options["types"] = global_types(installed)
    options["typeRoots"] = [*(["./node_modules/@types"] if installed is not None else []), str(grader_types)]
    return {"compilerOptions": options, "files": files}


def parse_tsc_output(output: str, ignore: set[str] | None = None) -> list[str]:
    problems = []
    for line in output.splitlines():
        match = _TSC_ERROR.match(line.strip())
        if not match or match["code"] in (ignore or set()):
            continue
        where = f"{match['file']}:{match['line']}: " if match["file"] else ""
        problems.append(f"{where}{match['code']} {match['msg']}")
    return problems


def run_tsc(box: StepBox, toolchain: Toolchain, tsc: Path, project: Path, config: Path, scratch: Path,
            ignore: set[str] | None = None, ts_version: str | None = None) -> list[str]:
    """tsc over `project` in a box without network (a tsconfig can name any file: only the box's are there).

    An `incremental` or `composite` tsconfig makes tsc trust the diagnostics a .tsbuildinfo records, and a
    workspace can ship a forged one that records none (a broken file then passes): tsc is pointed at a build info
    file of the grading's own that does not exist yet (TypeScript >= 5.6 allows that without `incremental`; the
    workers never read one)."""
    env = npm_env(scratch / "home", [toolchain.bin_dir])
    cmd = [str(toolchain.node), str(tsc), "--noEmit", "--pretty", "false", "-p", str(config)]
    if _at_least(ts_version or toolchain_typescript(toolchain), (5, 6)):
        cmd += ["--tsBuildInfoFile", str(scratch / f"tsc-{uuid.uuid4().hex}.tsbuildinfo")]
    done = box.run(cmd, cwd=project, env=env, timeout_s=TYPECHECK_TIMEOUT_S)
    return tsc_problems(done.output, None if done.timed_out else done.returncode, ignore)


def toolchain_typescript(toolchain: Toolchain) -> str | None:
    return package_version(toolchain.node_modules, "typescript")


def _at_least(version: str | None, wanted: tuple[int, int]) -> bool:
    match = re.match(r"(\d+)\.(\d+)", version or "")
    return bool(match) and (int(match[1]), int(match[2])) >= wanted


CACHED_TYPECHECK = "the remembered result (same files, config, compiler and node_modules set) of: "
_UNFINISHED = ("tsc did not finish within ", "tsc exited ")


def tsc_finished(problems: list[str]) -> bool:
    """Whether tsc ran to its end (diagnostics, or none), not past the timeout or into a crash."""
    return not any(p.startswith(_UNFINISHED) for p in problems)


def tsc_problems(output: str, returncode: int | None, ignore: set[str] | None = None) -> list[str]:
    """What a tsc run (one-shot or a worker's) says is wrong; returncode None: it ran past the timeout."""
    if returncode is None:
        return [f"tsc did not finish within {TYPECHECK_TIMEOUT_S}s"]
    problems = parse_tsc_output(output, ignore)
    if returncode != 0 and not problems and not ignore:
        return [f"tsc exited {returncode}: {output.strip()[-800:]}"]
    return problems


# ---- the runtime ---------------------------------------------------------------------------------------------------


class NodeRuntime(Runtime):
    name = "node"
    source_suffixes = source.JS_SUFFIXES

    def install(self, work: Workdir) -> Installation:
        started = time.perf_counter()
        workdir = work.copy
        manifest = read_manifest(workdir)
        try:
            toolchain = ensure_toolchain()  # the pinned toolchain: no input of the workspace's
        except ToolchainError as exc:
            raise InstallError(str(exc), infra=True) from exc
        lockfile = find_lockfile(workdir)
        timings: dict[str, float] = {}
        how = " ".join(["npm", *_npm_command(lockfile)])
        ro_binds: list[tuple[Path, Path]] = []
        if needs_private_install(manifest):
            box: str | None = run_npm(toolchain, _npm_command(lockfile), workdir, work, workspace_code=True)
            node_modules = workdir / "node_modules"
            how += ": private node_modules (local references)"
        else:
            t = time.perf_counter()
            node_modules, reused, box = ensure_modules(manifest, lockfile, toolchain, work)
            timings["modules_s"] = time.perf_counter() - t
            (workdir / "node_modules").mkdir(exist_ok=True)  # where the shared set is bound, read-only
            ro_binds.append((node_modules, workdir / "node_modules"))
            how += f": {'reused' if reused else 'new'} node_modules {node_modules.parent.name}"
        packages = {sdk: next((p for p in pkgs if package_version(node_modules, p)), pkgs[0])
                    for sdk, pkgs in _SDK_PACKAGES.items()}
        versions = {sdk: package_version(node_modules, pkg) for sdk, pkg in packages.items()}
        sdk = next(((p, v) for p, v in ((p, versions[s]) for s, p in packages.items()) if v), None)
        declaration = "package.json" + (f" + {lockfile.name}" if lockfile else "")
        detail = f"{declaration} -> {how}, node {toolchain.node_version}" + (f" ({sdk[0]} {sdk[1]})" if sdk else "")
        timings["install_s"] = time.perf_counter() - started
        return NodeInstallation(
            detail=detail,
            path_prefix=[workdir / "node_modules" / ".bin", toolchain.bin_dir],
            interpreter=toolchain.node,
            versions=versions,
            packages=packages,
            runtime_roots=[toolchain.root],
            ro_binds=ro_binds,
            box=box,
            workdir=workdir,
            node_modules=node_modules,
            toolchain=toolchain,
            declares_typescript="typescript" in _declared(manifest),
            timings=timings,
        )

    def typecheck(self, work: Workdir, installation: Installation | None) -> list[str]:
        files = self.source_files(work.copy)
        if not files:
            return ["no TypeScript or JavaScript source files in the workspace"]
        rel = [f.relative_to(work.copy).as_posix() for f in files]
        if not isinstance(installation, NodeInstallation) or installation.toolchain is None:
            return self._typecheck_uninstalled(work, rel)
        toolchain, workdir = installation.toolchain, installation.workdir
        declared_tsc = Path("typescript") / "bin" / "tsc"
        own_version = (package_version(installation.node_modules, "typescript")
                       if installation.declares_typescript and (installation.node_modules / declared_tsc).is_file()
                       else None)
        box: StepBox | None = None

        def run(config: Path, own: bool) -> list[str]:
            """tsc over `config`: the workspace's own TypeScript (`own`) or the grader's."""
            nonlocal box
            tsc = workdir / "node_modules" / declared_tsc if own else toolchain.tsc
            # Over a shared set the answer is remembered by what tsc reads (tsc_cache.py) and a long-lived compiler
            # can check it (tsc_workers.py); a private install is checked one-shot, every time.
            compiler = f"{config.name}\0" + (f"own {own_version}" if own else f"toolchain {toolchain.root}")
            remembered = tsc_cache.key_for(workdir, compiler, installation.node_modules) \
                if installation.ro_binds else None
            if (hit := tsc_cache.lookup(remembered)) is not None:
                work.isolation["typecheck"] = f"{CACHED_TYPECHECK}{hit[1]}"
                return hit[0]
            key = (tsc_workers.WorkerKey(installation.node_modules, "own" if own else "toolchain", toolchain.root)
                   if installation.ro_binds else None)
            if key is not None and (answer := tsc_workers.check(key, toolchain, workdir, config,
                                                                TYPECHECK_TIMEOUT_S)):
                work.isolation["typecheck"] = answer[1]
                problems = tsc_problems(answer[0].output, answer[0].exit_code)
            else:
                if box is None:
                    box = StepBox(work.scratch, net="none", ro_paths=[toolchain.root],
                                  ro_binds=installation.ro_binds)
                    work.isolation["typecheck"] = box.description
                problems = run_tsc(box, toolchain, tsc, workdir, config, work.scratch,
                                   ts_version=own_version if own else None)
            tsc_cache.remember(remembered, problems, work.isolation["typecheck"], complete=tsc_finished(problems))
            return problems

        try:
            if (workdir / "tsconfig.json").is_file():
                problems = run(workdir / "tsconfig.json", own_version is not None)
                # A tsconfig whose include matches none of the files (a JS workspace): check them with the defaults.
                if not any(p.startswith("TS18003") for p in problems):
                    return problems
            # The workspace's TypeScript checks the defaults when it declares one that understands them.
            own = _at_least(own_version, DEFAULTS_NEED_TYPESCRIPT)
            config = workdir / DEFAULT_TSCONFIG
            config.write_text(json.dumps(default_tsconfig(
                rel, own_version if own else toolchain_typescript(toolchain), toolchain.types_root,
                installation.node_modules / "@types"), indent=2))
            return run(config, own)
        finally:
            if box is not None:
                box.close()

    def _typecheck_uninstalled(self, work: Workdir, rel: list[str]) -> list[str]:
        """Source-imports tasks have no install: check with the pinned tsc, packages unresolved (their types are
        `any`), from a config outside the copy."""
        try:
            toolchain = ensure_toolchain()
        except ToolchainError as exc:
            raise InstallError(str(exc), infra=True) from exc
        project = work.scratch / "tsc-config"
        project.mkdir(exist_ok=True)
        config = project / "tsconfig.json"
        files = [str(work.copy / r) for r in rel]
        config.write_text(json.dumps(default_tsconfig(files, toolchain_typescript(toolchain), toolchain.types_root)))
        box = StepBox(work.scratch, net="none", ro_paths=[toolchain.root], ro_binds=[])
        work.isolation["typecheck"] = box.description
        try:
            # From the copy, so tsc names files relative to it (it writes nothing: noEmit, no incremental).
            return run_tsc(box, toolchain, toolchain.tsc, work.copy, config, work.scratch, ignore=_UNRESOLVED_CODES)
        finally:
            box.close()

    def default_start_command(self, installation: Installation, entry: Path) -> list[str]:
        """`tsx <entry>` (tsx's loader in the pinned node, one process) for TypeScript, `node <entry>` for
        JavaScript; the grader runs it in the copy."""
        assert isinstance(installation, NodeInstallation) and installation.toolchain is not None
        toolchain = installation.toolchain
        rel = entry.relative_to(installation.workdir).as_posix()
        runner = [str(toolchain.node)]
        if entry.suffix in _TS_SUFFIXES:
            runner += ["--import", toolchain.tsx_loader.as_uri()]
        return [*runner, rel]

    def imported_modules(self, workspace: Path) -> set[str]:
        return source.js_imports(self.source_files(workspace))
