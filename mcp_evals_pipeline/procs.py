"""Spawning and reaping untrusted processes: sanitized environments, free ports, whole-tree kills."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

import psutil

# Nothing of the harness's environment reaches what it spawns except these, so secrets, the user's shell setup
# and package-manager script context (npm_*, VIRTUAL_ENV of the harness, NODE_ENV...) never leak in.
_SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


def sanitized_env(
    *, home: Path, tmp: Path, path_prefix: list[Path] | None = None, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    prefix = ":".join(str(p) for p in path_prefix or [])
    env = {
        "PATH": f"{prefix}:{_SYSTEM_PATH}" if prefix else _SYSTEM_PATH,
        "HOME": str(home),
        "TMPDIR": str(tmp),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "SHELL": "/bin/bash",
        "PYTHONUNBUFFERED": "1",
        # The server must not litter the graded workspace with __pycache__ (environments are precompiled).
        "PYTHONDONTWRITEBYTECODE": "1",
        # mcp-use (npm and PyPI) reports usage to a telemetry service by default: nothing leaves a sandbox.
        "MCP_USE_ANONYMIZED_TELEMETRY": "false",
    }
    env.update(extra or {})
    return env


@functools.cache
def pid_namespace_prefix() -> tuple[str, ...]:
    """`unshare` in a new pid namespace with its own /proc, when the host allows it (root here): the server under
    test then cannot read the harness's environment or command line through /proc/<ppid>, nor see its other
    processes. Detected once; empty where it does not work."""
    cmd = ("unshare", "--pid", "--fork", "--mount-proc", "--kill-child")
    if shutil.which("unshare") is None:
        return ()
    try:
        ok = subprocess.run([*cmd, "true"], capture_output=True, timeout=10, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    return cmd if ok else ()


def free_port() -> int:
    """A port the kernel just handed out and released; the server binds it moments later."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def can_connect(host: str, port: int, timeout: float = 0.2) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


_PR_SET_PDEATHSIG = 1


# Resolved once, in the parent: the child of a fork in a threaded process must not dlopen (the loader's lock may be
# held by a thread that no longer exists there; a sandboxed agent command once died of SIGSEGV before its exec).
_PRCTL = ctypes.CDLL(None, use_errno=True).prctl


def _die_with_parent() -> None:
    """Runs in the child before exec: if the harness dies hard (SIGKILL, OOM), the kernel kills the child too,
    since no `finally` of ours will run then."""
    _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL)


def spawn(cmd: list[str], *, cwd: Path, env: Mapping[str, str], log_path: Path) -> subprocess.Popen[bytes]:
    """Start cmd in its own session (so its process group can be killed whole), output to log_path."""
    log = open(log_path, "wb")  # noqa: SIM115 - the child owns the descriptor; closed below after the fork
    try:
        return subprocess.Popen(
            cmd, cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True, preexec_fn=_die_with_parent,
        )
    finally:
        log.close()


def process_tree(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


_TCP_LISTEN = "0A"


def listening_ports(pid: int) -> set[int]:
    """TCP ports the process and its descendants listen on, in whichever network namespace each is (a boxed
    server's own): each process's sockets looked up in its own /proc/<pid>/net, which psutil does not do."""
    ports: set[int] = set()
    for proc in process_tree(pid):
        inodes = set()
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{proc.pid}/fd"):
                with contextlib.suppress(OSError):  # closed meanwhile
                    link = os.readlink(f"/proc/{proc.pid}/fd/{fd}")
                    if link.startswith("socket:["):
                        inodes.add(link[8:-1])
        for table in ("tcp", "tcp6") if inodes else ():
            with contextlib.suppress(OSError):
                for line in Path(f"/proc/{proc.pid}/net/{table}").read_text().splitlines()[1:]:
                    fields = line.split()
                    if len(fields) > 9 and fields[3] == _TCP_LISTEN and fields[9] in inodes:
                        ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def kill_tree(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process group and every descendant (including any that left the group), then reap."""
    descendants = process_tree(proc.pid)[1:]
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    for child in descendants:
        with contextlib.suppress(psutil.Error):
            child.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)
    _wait_until_dead(descendants, timeout=5)


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _wait_until_dead(procs: list[psutil.Process], timeout: float) -> None:
    """SIGKILL is delivered asynchronously: wait until each process has exited (a zombie awaiting its reaper counts
    as exited), so that callers may rely on the tree being gone when kill_tree returns. Not ours to reap: they may
    be children of the server or of a pid-namespace init."""
    deadline = time.monotonic() + timeout
    pending = [p for p in procs if _alive(p)]
    while pending and time.monotonic() < deadline:
        time.sleep(0.02)
        pending = [p for p in pending if _alive(p)]


def finish(proc: subprocess.Popen[bytes], timeout_s: float, log: Path, max_chars: int) -> tuple[bool, str]:
    """Wait for a sandbox command; past its timeout kill its whole tree. Returns (timed out, the tail of its log),
    the log removed. A command that finished may leave a backgrounded process running: the caller tracks it."""
    timed_out = False
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill_tree(proc)
    output = tail(log, max_chars)
    log.unlink(missing_ok=True)
    return timed_out, output


def tail(path: Path, max_chars: int = 20_000) -> str:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return ""
    text = data.decode("utf-8", errors="replace")
    return text if len(text) <= max_chars else "[... truncated ...]\n" + text[-max_chars:]
