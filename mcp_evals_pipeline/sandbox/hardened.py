"""The `hardened` backend: bubblewrap + cgroups v1 + a loopback-only network, for agents we do not trust.

One sandbox is one long-lived bubblewrap "box" (`bwrap ... sleep infinity`) started at open:

- mounts: only system directories (/usr, /etc, /opt, /var and the merged-usr symlinks) read-only, a fresh
  /dev and /proc (of the box's own pid namespace: the host's processes are invisible), a private tmpfs /tmp,
  and the workspace, the only writable path. /root, /home, /work, /run, the results root and the rest of the
  host are not mounted at all;
- namespaces: new pid, ipc, uts, cgroup and (net=none, the default) network namespace: only `lo` exists;
- every command enters the box with `nsenter` (mount, pid, net namespaces of the box, its root, the
  workspace as cwd) and runs as an unprivileged uid (nobody) with no capabilities, an empty bounding set and
  no_new_privs, with only our sanitized environment;
- a cgroup v1 per sandbox (memory and pids controllers) holds the box and every command: the memory limit
  (OOM: the kernel kills a process; the command's output says so), the process-count limit (a fork bomb hits
  pids.max); removed on close;
- close kills the box (its pid namespace dies with it: every process an agent backgrounded), sweeps the
  cgroups, removes them, and hands the workspace back to its owner.

A process backgrounded by one command survives to the next (same box, same pid namespace), as with `local`.

For agent runners that start a CLI in the box (agents/codex_agent.py, agents/claude_agent.py, via
agents/cli_tools.private_run_dir / reachable_endpoint):
- `private_dir()`: a fresh directory outside the workspace (HOME and the CLI's config), at the same path
  on the host and in the box (one 0711 root-owned parent bound read-write), 0700 and handed to the sandbox uid
  before every command, removed on close;
- the CLIs and the pinned Node toolchain (cache_dir()/agent-clis, cache_dir()/node-toolchain) are mounted
  read-only at their host paths;
- `allow_endpoint(url)` (net=proxy): a host-loopback endpoint (the key proxy each CLI run talks to, see
  agents/key_proxy.py) is relayed to the same port on the box's loopback; any other host:port is added to the egress
  proxy's allow-list (both CLIs honour HTTPS_PROXY), though the runners no longer ask for one.

Settings (environment): MCP_EVALS_SANDBOX_MEM (default 2G), MCP_EVALS_SANDBOX_PIDS (512),
MCP_EVALS_SANDBOX_NET (none | proxy | host; default none), MCP_EVALS_SANDBOX_RO_PATHS (extra read-only paths, `:`
separated, e.g. a Node toolchain), MCP_EVALS_SANDBOX_UID (65534).

Network modes (MCP_EVALS_SANDBOX_NET): none (loopback only), proxy (loopback only, plus an allow-listing HTTP(S)
proxy for the package registries: see sandbox/egress.py; HTTP(S)_PROXY set for the agent),
host (the host's network, unrestricted: an explicit opt-out, recorded as net=host).
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from mcp_evals_pipeline import procs
from mcp_evals_pipeline.sandbox.base import CommandResult, Sandbox, SandboxError, chown_tree, tool_dirs
from mcp_evals_pipeline.sandbox.egress import FORWARDER, PROXY_PORT, EgressProxy, PortRelay, proxy_env, socket_parent

OUTPUT_LIMIT = 30_000
CGROUP_ROOT = Path("/sys/fs/cgroup")
NOBODY = 65534
# Top-level host paths mounted read-only in the box; everything else is absent.
SYSTEM_DIRS = ("usr", "etc", "opt", "var", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
# Inside /var and /etc: paths that are hidden (empty tmpfs) even though their parent is mounted.
# The agent CLIs' read-only toolchains (agents/cli_tools.py, node_toolchain.py), mounted at their host paths.
LOOPBACK = ("127.0.0.1", "localhost", "::1")
MASKED = ("/var/tmp", "/var/lib", "/var/log", "/var/cache", "/var/spool", "/var/mail", "/etc/ssh", "/etc/ssl/private")


def _parse_size(text: str) -> int:
    text = text.strip().upper().removesuffix("B")
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def _human(n: int) -> str:
    for unit, size in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n % size == 0:
            return f"{n // size}{unit}"
    return str(n)


# --- what the host can do ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HostSupport:
    bwrap: str | None  # the working bwrap binary, or None
    nsenter_setpriv: bool
    userns: bool
    pidns: bool
    netns: bool
    cgroup_memory: Path | None  # the parent memory cgroup we may create children in
    cgroup_pids: Path | None
    missing: tuple[str, ...] = field(default=())

    @property
    def can_harden(self) -> bool:
        """Everything the hardened backend needs for full isolation."""
        return not self.missing


def _own_cgroup(controller: str) -> Path | None:
    """This process's cgroup v1 directory for a controller, if mounted and writable (a child can be made)."""
    base = CGROUP_ROOT / controller
    if not (base / "cgroup.procs").exists():
        return None
    rel = "/"
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            if controller in controllers.split(","):
                rel = path
    parent = base / rel.lstrip("/")
    if not parent.is_dir():
        parent = base
    probe = parent / f"mcp-evals-probe-{uuid.uuid4().hex[:8]}"
    try:
        probe.mkdir()
        ok = (probe / "cgroup.procs").exists()
        probe.rmdir()
    except OSError:
        return None
    return parent if ok else None


def _try(cmd: list[str], timeout: float = 10) -> tuple[bool, str]:
    try:
        out = subprocess.run(cmd, capture_output=True, timeout=timeout, env={"PATH": "/usr/sbin:/usr/bin:/bin"})
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"{type(exc).__name__}: {exc}"
    return out.returncode == 0, (out.stdout + out.stderr).decode(errors="replace").strip()[-300:]


@functools.cache
def detect() -> HostSupport:
    """Probe (not assume) what this host allows. Cached for the process."""
    missing: list[str] = []
    bwrap = shutil.which("bwrap")
    pidns = netns = False
    if bwrap is None:
        missing.append("bubblewrap is not installed (Debian: apt-get install -y bubblewrap)")
    else:
        base = [bwrap, *_mount_args(), "--unshare-pid", "--die-with-parent", "--clearenv", "--cap-drop", "ALL"]
        ok, out = _try([*base, "/bin/true"])
        if not ok:
            missing.append(f"bubblewrap does not run here: {out}")
            bwrap = None
        else:
            pidns = True
            netns, out = _try([*base, "--unshare-net", "/bin/true"])
            if not netns:
                missing.append(f"no network namespace (bwrap --unshare-net failed: {out})")
    userns = Path("/proc/self/ns/user").exists() and _read_int("/proc/sys/user/max_user_namespaces", 1) > 0
    tools = all(shutil.which(t) for t in ("nsenter", "setpriv"))
    if not tools:
        missing.append("nsenter/setpriv missing (Debian: util-linux)")
    if os.geteuid() != 0:
        missing.append("not root: cgroups, nsenter and the uid switch need root")
    memory, pids = _own_cgroup("memory"), _own_cgroup("pids")
    if memory is None:
        missing.append("cgroup v1 memory controller not mounted or not writable at /sys/fs/cgroup/memory")
    if pids is None:
        missing.append("cgroup v1 pids controller not mounted or not writable at /sys/fs/cgroup/pids")
    return HostSupport(bwrap=bwrap, nsenter_setpriv=tools, userns=userns, pidns=pidns, netns=netns,
                       cgroup_memory=memory, cgroup_pids=pids, missing=tuple(missing))


def _read_int(path: str | Path, default: int) -> int:
    try:
        return int(Path(path).read_text().strip())
    except (OSError, ValueError):
        return default


ISOLATION_LEVELS = ("none", "local", "hardened")


def require_isolation(level: str) -> HostSupport | None:
    """`--require-isolation LEVEL`: raise SandboxError (with what is missing) unless the host provides it.

    none/local: always satisfied. hardened: bubblewrap working (pid + network namespaces), nsenter/setpriv, root,
    writable cgroup v1 memory and pids controllers."""
    if level in ("none", "local"):
        return None
    if level != "hardened":
        raise SandboxError(f"unknown isolation level {level!r} (have: {', '.join(ISOLATION_LEVELS)})")
    support = detect()
    if not support.can_harden:
        raise SandboxError("the hardened sandbox is not available on this host: " + "; ".join(support.missing))
    return support


# --- the box ----------------------------------------------------------------------------------------------------


def _mount_args() -> list[str]:
    args: list[str] = []
    for name in SYSTEM_DIRS:
        path = Path("/") / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
    for masked in MASKED:
        if Path(masked).is_dir():
            args += ["--tmpfs", masked]
    return [*args, "--dev", "/dev", "--proc", "/proc", "--perms", "1777", "--tmpfs", "/tmp"]


def _ro_bind_args(ro_paths: list[Path]) -> list[str]:
    """The extra read-only paths, after the box's own /tmp so a path under the host's /tmp (a checkout there)
    stays visible; their ancestors are created traversable first (bwrap would make them 0700)."""
    dirs: list[str] = []
    for extra in ro_paths:
        up = [p for p in reversed(extra.parents) if p != Path("/")]
        if not extra.exists() or not up or up[0].name in SYSTEM_DIRS:
            continue
        for path in up:
            if str(path) not in dirs:
                dirs += ["--perms", "0755", "--dir", str(path)]
    binds = [arg for extra in ro_paths if extra.exists() for arg in ("--ro-bind", str(extra), str(extra))]
    return [*dirs, *binds]


class _Cgroup:
    """One cgroup v1 directory per controller for one sandbox."""

    def __init__(self, support: HostSupport, name: str, memory: int, pids: int):
        self.dirs: dict[str, Path] = {}
        for controller, parent in (("memory", support.cgroup_memory), ("pids", support.cgroup_pids)):
            if parent is None:
                continue
            path = parent / name
            path.mkdir()
            self.dirs[controller] = path
        if "memory" in self.dirs:
            mem = self.dirs["memory"]
            (mem / "memory.limit_in_bytes").write_text(str(memory))
            with contextlib.suppress(OSError):  # no swap accounting: nothing to escape into
                (mem / "memory.memsw.limit_in_bytes").write_text(str(memory))
            with contextlib.suppress(OSError):
                (mem / "memory.swappiness").write_text("0")
        if "pids" in self.dirs:
            (self.dirs["pids"] / "pids.max").write_text(str(pids))

    def join(self) -> None:
        """Runs in the child before exec (and before it can fork): move it into every controller's cgroup."""
        for path in self.dirs.values():
            (path / "cgroup.procs").write_text(str(os.getpid()))

    def oom_kills(self) -> int:
        mem = self.dirs.get("memory")
        if mem is None:
            return 0
        with contextlib.suppress(OSError):
            for line in (mem / "memory.oom_control").read_text().splitlines():
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
            return _read_int(mem / "memory.failcnt", 0)
        return 0

    def pids_limited(self) -> int:
        path = self.dirs.get("pids")
        if path is None:
            return 0
        with contextlib.suppress(OSError, ValueError):
            return int((path / "pids.events").read_text().split()[-1])
        return 0

    def members(self) -> set[int]:
        out: set[int] = set()
        for path in self.dirs.values():
            with contextlib.suppress(OSError):
                out.update(int(p) for p in (path / "cgroup.procs").read_text().split())
        return out

    def destroy(self) -> None:
        """Kill whatever is left (freezing is not needed: pids.max bounds a fork race) and remove the dirs."""
        deadline = time.monotonic() + 10
        while (members := self.members()) and time.monotonic() < deadline:
            for pid in members:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.05)
        for path in self.dirs.values():
            for _ in range(50):
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.05)


def _preexec(cgroup: _Cgroup | None) -> None:
    procs._die_with_parent()
    if cgroup is not None:
        cgroup.join()


class HardenedSandbox(Sandbox):
    backend = "hardened"

    def __init__(self, workspace: Path, extra_env: dict[str, str] | None = None, *, net: str | None = None,
                 memory: str | int | None = None, pids: int | None = None, ro_paths: list[Path] | None = None,
                 ro_binds: list[tuple[Path, Path]] | None = None):
        super().__init__(workspace)
        support = detect()
        if support.bwrap is None or not support.nsenter_setpriv or os.geteuid() != 0:
            raise SandboxError("the hardened sandbox is not available on this host: " + "; ".join(support.missing))
        self.net = net or os.environ.get("MCP_EVALS_SANDBOX_NET", "none")
        if self.net not in ("none", "proxy", "host"):
            raise SandboxError(f"MCP_EVALS_SANDBOX_NET must be none, proxy or host, not {self.net!r}")
        if self.net != "host" and not support.netns:
            raise SandboxError(f"net={self.net} asked for but this host has no network namespaces")
        mem = memory if memory is not None else os.environ.get("MCP_EVALS_SANDBOX_MEM", "2G")
        self.memory_limit = mem if isinstance(mem, int) else _parse_size(mem)
        self.pids_limit = pids or int(os.environ.get("MCP_EVALS_SANDBOX_PIDS", "512"))
        self.uid = int(os.environ.get("MCP_EVALS_SANDBOX_UID", str(NOBODY)))
        extra_ro = [Path(p) for p in os.environ.get("MCP_EVALS_SANDBOX_RO_PATHS", "").split(":") if p]
        self._ro_paths = [*(ro_paths or []), *extra_ro, *tool_dirs()]
        # (host path, path in the box) read-only, over the writable workspace: e.g. a shared node_modules at
        # <copy>/node_modules, so nothing in the box can write what other gradings share.
        self._ro_binds = list(ro_binds or [])
        # Runners' private directories (private_dir()): bound read-write into the box at the same path.
        self._private_root = Path(tempfile.mkdtemp(prefix="sandbox-private-"))
        self._private_root.chmod(0o711)
        self._private: list[Path] = []
        self._relays: list[PortRelay] = []
        self._forwarded: dict[int, tuple[str, int]] = {}
        self._live: list[subprocess.Popen[bytes]] = []
        self._box: subprocess.Popen[bytes] | None = None
        self._cgroup: _Cgroup | None = None
        self._proxy: EgressProxy | None = None
        self._closed = False
        st = self.workspace.stat()
        self._owner = (st.st_uid, st.st_gid)
        self._scratch = Path(tempfile.mkdtemp(prefix="sandbox-hardened-", dir=socket_parent()))  # logs, sockets
        # Inside the box: HOME and TMPDIR on the private tmpfs.
        self._env = procs.sanitized_env(home=Path("/tmp/home"), tmp=Path("/tmp"), extra=extra_env)
        try:
            if support.cgroup_memory or support.cgroup_pids:
                self._cgroup = _Cgroup(support, f"mcp-evals-{uuid.uuid4().hex[:12]}", self.memory_limit,
                                       self.pids_limit)
            chown_tree(self.workspace, self.uid, self.uid)
            self._start_box(support.bwrap)
            if self._proxy is not None:
                self._start_forwarder()
            home = self.run("mkdir -p -m 0700 /tmp/home", 30)  # HOME on the box's tmpfs, the agent's own
            if home.exit_code != 0:
                raise SandboxError(f"could not prepare HOME in the box: {home.output}")
        except BaseException as exc:
            self.close()
            if isinstance(exc, SandboxError) or not isinstance(exc, Exception):
                raise  # an interrupt (SIGINT, a run's termination) stays one: never the trial's infra.sandbox
            raise SandboxError(f"could not start the hardened sandbox: {type(exc).__name__}: {exc}") from exc
        cg = "cgroup(" + ",".join(
            part for part, on in ((f"mem={_human(self.memory_limit)}", "memory"), (f"pids={self.pids_limit}", "pids"))
            if self._cgroup and on in self._cgroup.dirs) + ")" if self._cgroup and self._cgroup.dirs else "cgroup=none"
        self.isolation = (f"bwrap ro-root(system dirs) ws-only-writable pidns caps-dropped uid={self.uid} "
                          f"{cg} net={self.net}")
        if self._proxy is not None:
            self.isolation += f"(allow={','.join(self._proxy.allowed)})"

    # The box ----------------------------------------------------------------------------------------------------

    def _start_box(self, bwrap: str) -> None:
        ws = str(self.workspace)
        # The workspace's ancestors are created in the box's (empty) root: traversable, whatever their host mode.
        ancestors = [str(p) for p in reversed(self.workspace.parents) if p != Path("/")]
        if ancestors and ancestors[0].lstrip("/") in SYSTEM_DIRS:
            ancestors = []  # under a read-only system dir: the host's own directories
        dirs = [arg for path in ancestors for arg in ("--perms", "0755", "--dir", path)]
        private = str(self._private_root)
        cmd = [bwrap, *_mount_args(), *_ro_bind_args(self._ro_paths), *dirs,
               "--bind", ws, ws, "--bind", private, private,
               *[arg for src, dst in self._ro_binds for arg in ("--ro-bind", str(src), str(dst))],
               "--chdir", ws,
               "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
               "--die-with-parent", "--new-session", "--clearenv", "--cap-drop", "ALL", "--hostname", "sandbox"]
        if self.net != "host":
            cmd.append("--unshare-net")
        if self.net == "proxy":
            share = self._scratch / "egress"
            share.mkdir(mode=0o755)
            share.chmod(0o755)
            self._proxy = EgressProxy(share / "proxy.sock")
            cmd += ["--perms", "0755", "--dir", "/run", "--bind", str(share), "/run/mcp-egress"]
        cmd += ["--", "/bin/sleep", "infinity"]
        log = self._scratch / "box.log"
        with open(log, "wb") as out:
            self._box = subprocess.Popen(cmd, env={}, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True, preexec_fn=functools.partial(_preexec, self._cgroup))
        # The box is ready when `sleep` runs (bwrap -> bwrap init in the namespace -> sleep).
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self._box.poll() is not None:
                raise SandboxError(f"bubblewrap exited at start: {procs.tail(log, 2000)}")
            target = self._sleep_pid()
            if target is not None:
                self._target = target
                return
            time.sleep(0.02)
        raise SandboxError("bubblewrap did not start within 10 s")

    def _sleep_pid(self) -> int | None:
        assert self._box is not None
        with contextlib.suppress(psutil.Error):
            for child in psutil.Process(self._box.pid).children(recursive=True):
                if child.name() == "sleep":
                    return child.pid
        return None

    def _enter(self, argv: list[str]) -> list[str]:
        """nsenter the box (mount, pid, net, ipc, uts namespaces; its root; the workspace) and drop to the uid."""
        spaces = ["--mount", "--pid", "--ipc", "--uts"] + (["--net"] if self.net != "host" else [])
        return ["nsenter", f"--target={self._target}", *spaces, "--root", "--wd", "--",
                "setpriv", f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups", "--inh-caps=-all",
                "--bounding-set=-all", "--no-new-privs", "--", *argv]

    def _start_forwarder(self) -> None:
        """Inside the box, as the sandbox uid: 127.0.0.1:PROXY_PORT -> the host proxy's socket."""
        self._forward(PROXY_PORT, "proxy.sock")
        self._env.update(proxy_env())

    def _forward(self, port: int, socket_name: str) -> None:
        """Inside the box, as the sandbox uid: listen on 127.0.0.1:port, relay to /run/mcp-egress/<socket_name>."""
        log = self._scratch / f"forwarder-{port}.log"
        argv = self._enter(["/usr/bin/python3", "-c", FORWARDER, str(port), f"/run/mcp-egress/{socket_name}"])
        with open(log, "wb") as out:
            proc = subprocess.Popen(argv, cwd="/", env=self._env, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True,
                                    preexec_fn=functools.partial(_preexec, self._cgroup))
        self._live.append(proc)
        deadline = time.monotonic() + 10
        while b"forwarding" not in log.read_bytes():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SandboxError(f"the egress forwarder did not start: {procs.tail(log, 2000)}")
            time.sleep(0.02)

    # For agent runners ------------------------------------------------------------------------------------------

    def private_dir(self, prefix: str = "agent-") -> Path:
        """A fresh directory only the sandbox uid (and root) can use, outside the workspace, at the same path on
        the host and in the box; handed to the sandbox uid before every command (so files the runner wrote in
        it, a key file included, are the box user's, mode as written), removed on close."""
        path = Path(tempfile.mkdtemp(prefix=prefix, dir=self._private_root))
        path.chmod(0o700)
        os.chown(path, self.uid, self.uid)
        self._private.append(path)
        return path

    def allow_endpoint(self, url: str) -> str:
        """Make a model endpoint reachable from the box; returns the URL to use inside it (the same URL).

        net=host: nothing to do. net=proxy: an endpoint on the host's loopback (a local model server or key
        proxy) is relayed to the same port on the box's loopback (FORWARDER -> unix socket -> host 127.0.0.1:port;
        NO_PROXY keeps clients direct); any other host:port is added to the egress proxy's allow-list. net=none:
        SandboxError (no network by choice)."""
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        port = parts.port or (443 if parts.scheme == "https" else 80)
        if not host or self.net == "host":
            return url
        if self.net != "proxy" or self._proxy is None:
            raise SandboxError(f"the model endpoint {host}:{port} is unreachable from a net={self.net} hardened "
                               f"sandbox (set MCP_EVALS_SANDBOX_NET=proxy)")
        if host in LOOPBACK:
            target = ("::1" if host == "::1" else "127.0.0.1", port)
            if self._forwarded.get(port) == target:
                return url
            if port in self._forwarded or port == PROXY_PORT:
                raise SandboxError(f"port {port} of the box's loopback is already in use")
            name = f"relay-{port}.sock"
            relay = PortRelay(self._scratch / "egress" / name, target)
            self._relays.append(relay)
            self._forward(port, name)
            self._forwarded[port] = target
            self.isolation += f"(relay=127.0.0.1:{port})"
        else:
            self._proxy.allow(f"{host}:{port}")
            self.isolation += f"(allow+={host}:{port})"
        return url

    # The Sandbox API --------------------------------------------------------------------------------------------

    def write_file(self, rel: str, content: str) -> int:
        """As the base, then hand the file (and any directory it created) to the sandbox uid."""
        path = self.resolve(rel)
        created = [p for p in [path, *path.parents] if p.is_relative_to(self.workspace) and not p.exists()]
        written = super().write_file(rel, content)
        for p in [path, *created]:
            with contextlib.suppress(FileNotFoundError):
                os.chown(p, self.uid, self.uid, follow_symlinks=False)
        return written

    def run(self, command: str, timeout_s: float) -> CommandResult:
        if self._closed or self._box is None or self._box.poll() is not None:
            raise SandboxError("the hardened sandbox is closed or its box died")
        for private in self._private:  # what a runner wrote there is the box user's
            with contextlib.suppress(OSError):
                chown_tree(private, self.uid, self.uid)
        log = self._scratch / f"cmd-{time.monotonic_ns()}.log"
        oom_before = self._cgroup.oom_kills() if self._cgroup else 0
        pids_before = self._cgroup.pids_limited() if self._cgroup else 0
        started = time.monotonic()
        with open(log, "wb") as out:
            proc = subprocess.Popen(self._enter(["/bin/bash", "-c", command]), cwd="/", env=self._env,
                                    stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True, preexec_fn=functools.partial(_preexec, self._cgroup))
        self._live.append(proc)
        timed_out, output = procs.finish(proc, timeout_s, log, OUTPUT_LIMIT)
        notes = []
        if self._cgroup and self._cgroup.oom_kills() > oom_before:
            notes.append(f"[sandbox: out of memory (limit {_human(self.memory_limit)}): the kernel killed a process]")
        if self._cgroup and self._cgroup.pids_limited() > pids_before:
            notes.append(f"[sandbox: process limit reached (pids.max={self.pids_limit}): a fork was refused]")
        if notes:
            output = (output + ("\n" if output and not output.endswith("\n") else "") + "\n".join(notes) + "\n")
        return CommandResult(
            exit_code=None if timed_out else proc.returncode,
            output=output,
            timed_out=timed_out,
            duration_ms=int((time.monotonic() - started) * 1000),
        )

    def spawn(self, command: str, log: Path) -> subprocess.Popen[bytes]:
        """A long-lived process in the box (as the box user) speaking over stdin/stdout pipes; its stderr goes to
        `log`. It dies with the box (close())."""
        if self._closed or self._box is None or self._box.poll() is not None:
            raise SandboxError("the hardened sandbox is closed or its box died")
        with open(log, "wb") as err:
            proc = subprocess.Popen(self._enter(["/bin/bash", "-c", command]), cwd="/", env=self._env,
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                    start_new_session=True, preexec_fn=functools.partial(_preexec, self._cgroup))
        self._live.append(proc)
        return proc

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        # The box first: its pid namespace dies with its init, every process in it, and each entered command's
        # nsenter (outside, still alive) reaps its own child at once. Killed the other way round, that child is
        # orphaned to the host's init, and the namespace's teardown waits until that init reaps it (a second or
        # more on this machine; never, where pid 1 reaps nothing).
        if self._box is not None:
            procs.kill_tree(self._box)
        for proc in list(self._live):
            procs.kill_tree(proc)
        self._live.clear()
        if self._cgroup is not None:
            self._cgroup.destroy()
        if self._proxy is not None:
            self._proxy.close()
        for relay in self._relays:
            relay.close()
        with contextlib.suppress(OSError):
            chown_tree(self.workspace, *self._owner)
        shutil.rmtree(self._scratch, ignore_errors=True)
        shutil.rmtree(self._private_root, ignore_errors=True)
