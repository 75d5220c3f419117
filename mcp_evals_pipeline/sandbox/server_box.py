"""The box the graded server runs in.

The server under test is code an untrusted agent wrote: it runs in a bubblewrap box of its own (detected, as for
the hardened sandbox), as an unprivileged uid (nobody, no capabilities, no_new_privs: /etc/shadow and every
root-only file stay unreadable). It sees the system directories and its runtime (interpreter, environment,
toolchain; a shared node_modules bound over the run directory's) read-only, its run directory (the grading's copy
of the workspace) and its HOME/TMPDIR read-write, and nothing else of the host's filesystem: not the checkout with
its `.env`, not HOME, not the other gradings' scratch, not the shared caches for writing. It gets its own pid, ipc
and uts namespaces, and a network namespace of its own: only its loopback, where relays (sandbox/egress.py, the
agent box's mechanism) stand for exactly the endpoints that trial needs. Each host-loopback port named in the
server's environment (the task's fake, the OAuth IdP) listens on the same port inside and leads to that port on
the host, and nowhere else; the server's own PORT is reached from the host through one listener the grader opens
once the server listens (`endpoint`). Nothing else on the host (the Dagster webserver, another trial's fakes, proxies
or IdP, the host's /proc/net) is reachable from inside. The namespace is held by the relay process (a box of its
own, uid nobody), and the server joins it. Limits (`Limits`, from the environment): memory and pids in a cgroup of
the server's own (where cgroup v1 is writable), and RLIMIT_FSIZE on every file it writes.

Fail closed: without a box the server does not start (grader/boxes.py: infra.sandbox), unless the debugging
opt-out MCP_EVALS_UNSAFE_UNBOXED_GRADING=1 is set (it then gets a pid namespace, procs.pid_namespace_prefix, and
the record says UNBOXED). MCP_EVALS_GRADER_BOX=0 disables the box as a host without bubblewrap would.

MCP_EVALS_GRADER_BOX=docker: the same box as a container (`docker run` of the sandbox image on the engine at
DOCKER_HOST): read-only root, the same mounts at the same paths, uid nobody, every capability dropped,
no-new-privileges, its own pid, ipc and uts namespaces, memory, pids and file size limits, and the network of a
relay container (`--network none` plus the same relays, bound over a unix-socket directory both mount).
The prefix is then the docker CLI, which is not the server: `server_pid` finds the container's init (the host sees
its processes, so the start stage's "our server listens" check reads the container's process tree), `stop` removes
the container as well as killing the CLI, and `box_failed` tells the engine's own failure (the CLI's exit code 125:
an infra failure) from the server's.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import psutil

from mcp_evals_pipeline import procs
from mcp_evals_pipeline.grader.boxes import SWITCH_ENV, UNBOXED, box_kind, refuse, unboxed_allowed
from mcp_evals_pipeline.sandbox.base import chown_tree
from mcp_evals_pipeline.sandbox.egress import FORWARDER, LoopbackRelay, PortRelay, socket_parent
from mcp_evals_pipeline.sandbox.hardened import NOBODY, SYSTEM_DIRS, _Cgroup, _human, _mount_args, _parse_size, detect

BOX_DESCRIPTION = (f"bwrap: ro system dirs and runtime; rw run dir, HOME and TMPDIR; pid/ipc/uts ns; own net ns "
                   f"(relays only); uid={NOBODY}, caps dropped, no_new_privs")
_DROP = ("setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--inh-caps=-all",
         "--bounding-set=-all", "--no-new-privs", "--")


@functools.cache
def _bwrap() -> str | None:
    """bwrap, when it works here with a pid namespace (probed once by running a box)."""
    support = detect()
    if support.bwrap is None or not support.pidns:
        return None
    try:
        done = subprocess.run([support.bwrap, *_mount_args(), "--unshare-pid", *_DROP, "true"],
                              capture_output=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return support.bwrap if done.returncode == 0 else None


def available() -> bool:
    if box_kind() == "docker":
        return docker_problem() is None
    return box_kind() == "bwrap" and os.geteuid() == 0 and _bwrap() is not None


def runtime_roots(interpreter: Path, path_prefix: Iterable[Path], roots: Iterable[Path] = ()) -> list[Path]:
    """What a server's runtime needs to read: the interpreter's installation (a venv's python links to a base
    interpreter elsewhere, e.g. under ~/.pyenv), the PATH entries the runtime puts first, and the runtime's own
    roots (its environment or toolchain)."""
    roots = list(roots)
    for path in (interpreter, *path_prefix):
        resolved = path.resolve()
        if resolved.is_file():  # <prefix>/bin/<interpreter>
            roots.append(resolved.parent.parent)
        elif resolved.name in ("bin", ".bin"):  # an environment's bin (its lib beside it); node_modules/.bin: the
            roots.append(resolved.parent)  # whole node_modules, hardlinked from a shared set, stays read-only
        else:
            roots.append(resolved)
    roots.append(Path(sys.base_prefix).resolve())
    return roots


def _binds(mounts: list[tuple[str, Path]], made: set[str]) -> list[str]:
    """The mounts (flag, path; each at its own place), shallowest first so a deeper one lands on top (a writable
    run directory inside the read-only cache, a read-only node_modules inside the writable run directory), after
    creating missing ancestors traversable (bwrap would make them 0700); ancestors under a system dir exist."""
    args: list[str] = []
    for flag, path in sorted(mounts, key=lambda m: len(m[1].parts)):
        if not path.exists():
            continue
        up = [p for p in reversed(path.parents) if p != Path("/")]
        if up and up[0].name not in SYSTEM_DIRS:
            for ancestor in up:
                if str(ancestor) not in made:
                    made.add(str(ancestor))
                    args += ["--perms", "0755", "--dir", str(ancestor)]
        args += [flag, str(path), str(path)]
    return args


def _outermost(paths: Iterable[Path]) -> list[Path]:
    """Without paths nested in another of the list (mounting both would hide nothing but cost a mount)."""
    unique = sorted({p.resolve() for p in paths}, key=lambda p: len(p.parts))
    kept: list[Path] = []
    for path in unique:
        if not any(path.is_relative_to(k) for k in kept):
            kept.append(path)
    return kept


def prefix(*, readable: Iterable[Path], writable: Iterable[Path], cwd: Path,
           ro_binds: Iterable[tuple[Path, Path]] = (), env: Mapping[str, str] | None = None) -> tuple[list[str], str]:
    """(command prefix, description) to start the graded server with; raises NoBox where no box can be made
    (unless the debugging opt-out is set). The writable paths are handed to the server's uid. Nesting decides the
    order of the mounts (see _binds): a read-only node_modules inside the writable run directory stays read-only.
    `env`: the environment the server is started with (a container takes exactly those variables from the CLI's
    environment; bwrap passes the environment through); its PORT is the port the host reaches (`endpoint`), and the
    host-loopback ports its values name are the only ones the server reaches. `stop` releases the box."""
    env = dict(env or {})
    if not available():
        if not unboxed_allowed():
            why = (f"{SWITCH_ENV}=0" if box_kind() == "off" else docker_problem() if box_kind() == "docker" else
                   "not root" if os.geteuid() != 0 else "; ".join(detect().missing) or "bubblewrap does not run here")
            raise refuse(why or "")
        return list(procs.pid_namespace_prefix()), UNBOXED
    limits = Limits.from_env()
    writable = _outermost(writable)
    for path in writable:
        path.mkdir(parents=True, exist_ok=True)
        chown_tree(path, NOBODY, NOBODY)
    port = int(env["PORT"]) if env.get("PORT", "").isdigit() else None
    net = _Net(box_kind(), port, reached_ports(env, port), limits)
    if box_kind() == "docker":
        return _docker_prefix(readable, writable, cwd, ro_binds, env, net, limits)
    readable = [p.resolve() for p in readable]
    inside_writable = [p for p in readable if any(p.is_relative_to(w) for w in writable)]
    elsewhere = [p for p in _outermost(p for p in readable if p not in inside_writable)
                 if p.parts[1:2] and p.parts[1] not in SYSTEM_DIRS]  # system dirs are mounted already
    mounts = [("--ro-bind", p) for p in elsewhere + inside_writable] + [("--bind", p) for p in writable]
    binds = [arg for src, dst in ro_binds for arg in ("--ro-bind", str(src), str(dst))]
    args = [
        *net.enter, _bwrap() or "bwrap", *_mount_args(), *_binds(mounts, set()), *binds,
        "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent", "--new-session",
        "--chdir", str(cwd), "--", *_DROP,
    ]
    return args, f"{BOX_DESCRIPTION}; {net.describe()}"


# ---- limits and the network --------------------------------------------------------------------------------------

MEM_ENV, PIDS_ENV, FSIZE_ENV = "MCP_EVALS_SERVER_MEM", "MCP_EVALS_SERVER_PIDS", "MCP_EVALS_SERVER_FSIZE"


@dataclass(frozen=True)
class Limits:
    """The graded server's limits (both forms): memory (a cgroup / the container's), processes (pids.max), and the
    size of any one file it writes (RLIMIT_FSIZE: a bigger write fails with EFBIG or SIGXFSZ)."""

    memory: int
    pids: int
    file_size: int

    @classmethod
    def from_env(cls) -> Limits:
        values: dict[str, int] = {}
        for field_name, var, default, parse in (("memory", MEM_ENV, "2G", _parse_size), ("pids", PIDS_ENV, "256", int),
                                                ("file_size", FSIZE_ENV, "1G", _parse_size)):
            raw = os.environ.get(var, default)
            try:
                values[field_name] = parse(raw)
            except ValueError:
                raise ValueError(f"{var}={raw!r} is not a size or count (e.g. {default})") from None
            if values[field_name] <= 0:
                raise ValueError(f"{var}={raw!r} must be positive")
        return cls(**values)

    def describe(self) -> str:
        return f"mem {_human(self.memory)}, pids {self.pids}, fsize {_human(self.file_size)}"


# A host-loopback URL in the server's environment: the endpoints (a fake, the IdP) it is meant to reach.
_LOOPBACK_PORT = re.compile(r"(?:127\.0\.0\.1|localhost|\[::1\]):(\d{1,5})\b")
READY_TIMEOUT_S = 30.0


def reached_ports(env: Mapping[str, str], own: int | None = None) -> list[int]:
    """The host-loopback ports named in the server's environment, but its own."""
    found = {int(m) for value in env.values() for m in _LOOPBACK_PORT.findall(value)}
    return sorted(p for p in found if 0 < p < 65536 and p != own)


class _Net:
    """The server's network namespace and its relays: a relay process (FORWARDER as nobody, in a bwrap box or a
    container with no network) holds the namespace; on the host a PortRelay per reached port and, once the server
    listens, one LoopbackRelay to its PORT. Also the server's cgroup (bwrap form)."""

    def __init__(self, kind: str, port: int | None, reach: list[int], limits: Limits):
        self.kind, self.port, self.reach, self.limits = kind, port, reach, limits
        self.dir = Path(tempfile.mkdtemp(prefix="mcp-evals-server-net-", dir=socket_parent()))
        self.relays: list[PortRelay] = []
        self.inbound: LoopbackRelay | None = None
        self.cgroup: _Cgroup | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.name = f"mcp-evals-server-net-{uuid.uuid4().hex[:12]}"
        try:
            self._open()
        except BaseException:
            self.close()
            raise
        _nets[self.key] = self

    def _open(self) -> None:
        os.chmod(self.dir, 0o755)
        os.chown(self.dir, NOBODY, NOBODY)  # the relay, as nobody, binds the inbound socket here
        rules: list[str] = []
        for port in self.reach:
            self.relays.append(PortRelay(self.dir / f"out-{port}.sock", ("127.0.0.1", port)))
            rules += [str(port), str(self.dir / f"out-{port}.sock")]
        if self.port is not None:
            rules += [str(self.dir / "in.sock"), str(self.port)]
        forwarder = ["/usr/bin/python3", "-c", FORWARDER, *rules]
        if self.kind == "docker":
            from mcp_evals_pipeline.sandbox.docker_backend import LABEL, DockerConfig

            cmd = [_cli(), *_host_args(), "run", "--rm", _NAME_FLAG, self.name, "--label", f"{LABEL}=1",
                   "--network", "none", "--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
                   "--user", f"{NOBODY}:{NOBODY}", "--memory", "128m", "--pids-limit", "64",
                   "--mount", f"type=bind,source={self.dir},target={self.dir}",
                   "--entrypoint", forwarder[0], DockerConfig.from_env().image, *forwarder[1:]]
        else:
            cmd = [_bwrap() or "bwrap", *_mount_args(), "--bind", str(self.dir), str(self.dir), "--unshare-net",
                   "--unshare-pid", "--unshare-ipc", "--die-with-parent", "--new-session", "--", *_DROP, *forwarder]
            support = detect()
            if support.cgroup_memory or support.cgroup_pids:
                self.cgroup = _Cgroup(support, self.name, self.limits.memory, self.limits.pids)
        log = self.dir / "relay.log"
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while b"forwarding" not in log.read_bytes():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise refuse(f"the server's network relay did not start: {procs.tail(log, 800).strip()}")
            time.sleep(0.02)
        self.enter: list[str] = []
        if self.kind == "docker":
            self.key = f"container:{self.name}"
            return
        holder = self._holder()
        self.key = f"--net=/proc/{holder}/ns/net"
        # Join the cgroup and cap file sizes (both inherited), then the namespace; each step execs the next.
        if self.cgroup is not None and self.cgroup.dirs:
            joins = " && ".join(f"echo $$ > {shlex.quote(str(d / 'cgroup.procs'))}" for d in self.cgroup.dirs.values())
            self.enter += ["/bin/sh", "-c", f'{joins} && exec "$@"', "server-box"]
        self.enter += ["prlimit", f"--fsize={self.limits.file_size}", "--", "nsenter", self.key, "--"]

    def _holder(self) -> int:
        """A process of the relay box (in the new namespace: bwrap itself stays in the host's)."""
        assert self.proc is not None
        ours = os.readlink("/proc/self/ns/net")
        for child in psutil.Process(self.proc.pid).children(recursive=True):
            with contextlib.suppress(OSError, psutil.Error):
                if os.readlink(f"/proc/{child.pid}/ns/net") != ours:
                    return child.pid
        raise refuse("the server's network relay has no namespace of its own")

    def describe(self) -> str:
        reach = ", ".join(f"127.0.0.1:{p}" for p in self.reach) or "nothing"
        if self.kind == "docker" or (self.cgroup and set(self.cgroup.dirs) == {"memory", "pids"}):
            limits = f"{self.limits.describe()} (cgroup)"
        else:  # say what does not hold rather than print a limit nothing enforces
            held = sorted(self.cgroup.dirs) if self.cgroup else []
            limits = (f"{self.limits.describe()} (cgroup v1 controllers writable here: {', '.join(held) or 'none'}; "
                      "the others unlimited)")
        return f"net: relays only (reaches {reach}); {limits}"

    def expose(self) -> int:
        """The host port at which the server's PORT answers (opened once)."""
        if self.inbound is None:
            assert self.port is not None
            self.inbound = LoopbackRelay(self.dir / "in.sock", self.port)
        return self.inbound.port

    def close(self) -> None:
        _nets.pop(getattr(self, "key", ""), None)
        for relay in [*self.relays, *([self.inbound] if self.inbound else [])]:
            relay.close()
        if self.proc is not None:
            procs.kill_tree(self.proc)
            if self.kind == "docker":
                with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                    subprocess.run([_cli(), *_host_args(), "rm", "--force", self.name],
                                   capture_output=True, timeout=60, check=False)
        if self.cgroup is not None:
            self.cgroup.destroy()
        shutil.rmtree(self.dir, ignore_errors=True)


_nets: dict[str, _Net] = {}


@atexit.register
def _close_all() -> None:
    """A prefix whose process nobody stopped (a crash between prefix and spawn) leaves nothing behind at exit."""
    for net in list(_nets.values()):
        with contextlib.suppress(Exception):
            net.close()


def _net_of(proc: subprocess.Popen[bytes]) -> _Net | None:
    return _net_of_args(proc.args if isinstance(proc.args, list) else [])


def _net_of_args(args: list[str]) -> _Net | None:
    return next((_nets[a] for a in args if isinstance(a, str) and a in _nets), None)


def release(args: list[str]) -> None:
    """Close the network and cgroup of a prefix whose process someone else started and ended (a stdio server,
    started by its client): `stop` does it for the processes started here."""
    net = _net_of_args(args)
    if net is not None:
        net.close()


def endpoint(proc: subprocess.Popen[bytes], port: int) -> int:
    """The host port at which the server started with PORT=port answers: the box's inbound relay, or the port
    itself for a server on the host's network (the debugging opt-out, our own servers)."""
    net = _net_of(proc)
    return port if net is None or net.port != port else net.expose()


# ---- the docker form ---------------------------------------------------------------------------------------------

DOCKER_ENGINE_FAILED = 125  # `docker run`'s own failure (no image, a bad mount, the engine gone), never the server's
_NAME_FLAG = "--name"


def _cli() -> str:
    return shutil.which("docker") or "docker"


def _probe() -> tuple[str | None, tuple[str, ...]]:
    """(why no server container can start here or None, the names of the variables the image sets), probed once
    per engine and image."""
    from mcp_evals_pipeline.sandbox.docker_backend import DockerConfig

    return _probe_image(os.environ.get("DOCKER_HOST", ""), DockerConfig.from_env().image)


@functools.cache
def _probe_image(host: str, image: str) -> tuple[str | None, tuple[str, ...]]:
    if shutil.which("docker") is None:
        return "MCP_EVALS_GRADER_BOX=docker but no docker CLI is installed", ()
    try:
        done = subprocess.run([_cli(), *_host_args(), "image", "inspect", "--format", "{{json .Config.Env}}", image],
                              capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"the Docker engine at {host or 'the default socket'} does not answer: {exc}", ()
    if done.returncode != 0:
        return (f"the sandbox image {image!r} is not available on the engine at {host or 'the default socket'} "
                f"(scripts/docker_engine.sh up builds it): {done.stderr.strip()[-300:]}"), ()
    return None, tuple(item.split("=", 1)[0] for item in json.loads(done.stdout or "null") or [])


def docker_problem() -> str | None:
    """Why no server container can be started here (None: one can)."""
    return _probe()[0]


def _host_args() -> list[str]:
    """The engine is named on the command line: the CLI runs with the server's environment, not the harness's."""
    host = os.environ.get("DOCKER_HOST")
    return ["-H", host] if host else []


def _docker_prefix(readable: Iterable[Path], writable: list[Path], cwd: Path, ro_binds: Iterable[tuple[Path, Path]],
                   env: Mapping[str, str], net: _Net, limits: Limits) -> tuple[list[str], str]:
    from mcp_evals_pipeline.sandbox.docker_backend import LABEL, DockerConfig

    config = DockerConfig.from_env()
    env_names = list(env)
    image_env = _probe()[1]
    # One mount per target (a later kind wins: a read-only bind over the run directory's node_modules, which the
    # runtime also names as readable). Nested mounts: the engine mounts by depth of the target, so a read-only
    # node_modules lands on top of the writable run directory whatever the order here.
    by_target = {p: (p, "ro") for p in _outermost(p for p in readable if p.resolve() != Path("/"))}
    by_target.update({p: (p, "rw") for p in writable})
    by_target.update({Path(dst): (Path(src), "ro") for src, dst in ro_binds})
    mount_args = [arg for dst, (src, mode) in by_target.items() if src.exists() for arg in (
        "--mount", f"type=bind,source={src},target={dst}" + (",readonly" if mode == "ro" else ""))]
    name = f"mcp-evals-server-{uuid.uuid4().hex[:12]}"
    args = [
        _cli(), *_host_args(), "run", "--rm", "--interactive", _NAME_FLAG, name,
        "--label", f"{LABEL}=1",
        "--network", net.key, "--ipc", "private", "--read-only", "--init",
        "--tmpfs", f"/tmp:rw,nosuid,nodev,size={config.tmp_size},mode=1777",
        "--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--user", f"{NOBODY}:{NOBODY}",
        "--memory", str(limits.memory), "--memory-swap", str(limits.memory), "--pids-limit", str(limits.pids),
        "--cpus", f"{config.cpus:g}", "--ulimit", f"nofile={config.nofile}:{config.nofile}",
        "--ulimit", f"fsize={limits.file_size}:{limits.file_size}",
        *mount_args, *[arg for key in sorted(set(env_names)) for arg in ("-e", key)],
        "--workdir", str(cwd), "--entrypoint", "/usr/bin/env", config.image,
        # exactly the server's environment, as in the bwrap box: not the image's variables nor the engine's HOSTNAME
        *[arg for key in sorted({*image_env, "HOSTNAME"} - set(env_names)) for arg in ("-u", key)], "--",
    ]
    description = (f"docker container ({config.image}): ro root and runtime; rw run dir, HOME and TMPDIR; "
                   f"pid/ipc/uts ns; own net ns (relays only); uid={NOBODY}, caps dropped, no-new-privileges; "
                   f"{net.describe()}")
    return args, description


def _container(proc: subprocess.Popen[bytes]) -> str | None:
    args = proc.args if isinstance(proc.args, list) else []
    if _NAME_FLAG in args and "run" in args:
        return str(args[args.index(_NAME_FLAG) + 1])
    return None


_pids: dict[str, int] = {}


def server_pid(proc: subprocess.Popen[bytes]) -> int | None:
    """The process whose tree holds the server: the container's init for the docker form (None until it runs),
    the started process otherwise."""
    name = _container(proc)
    if name is None:
        return proc.pid
    if name not in _pids:
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            done = subprocess.run([_cli(), *_host_args(), "inspect", "--format",
                                   "{{.State.Pid}}", name], capture_output=True, text=True, timeout=10, check=False)
            if done.returncode == 0 and done.stdout.strip().isdigit() and int(done.stdout) > 0:
                _pids[name] = int(done.stdout)
    return _pids.get(name)


def box_failed(proc: subprocess.Popen[bytes]) -> bool:
    """The box, not the server, failed: the docker CLI's own exit code."""
    return _container(proc) is not None and proc.returncode == DOCKER_ENGINE_FAILED


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Kill the server: its process tree, for the docker form its container (killing the CLI leaves it), and its
    network's relays and cgroup."""
    net = _net_of(proc)
    procs.kill_tree(proc)
    name = _container(proc)
    if name is not None:
        _pids.pop(name, None)
        _remove_container(name)
    if net is not None:
        net.close()


def _remove_container(name: str, settle_s: float = 2.0) -> None:
    """`docker rm --force`. A CLI killed while its create request was in flight leaves the engine to create the
    container a moment later, after a first rm found nothing: so while rm finds no such container, look again for
    a few seconds (a loaded machine left such containers behind)."""
    deadline = time.monotonic() + settle_s
    while True:
        try:
            done = subprocess.run([_cli(), *_host_args(), "rm", "--force", name],
                                  capture_output=True, text=True, timeout=60, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return
        if done.returncode == 0 or "no such container" not in done.stderr.lower() or time.monotonic() > deadline:
            return
        time.sleep(0.5)
