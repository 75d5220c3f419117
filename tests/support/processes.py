"""Finding processes a test expects to be gone. Zombies count as gone (dead, awaiting a reaper that may be pid 1 of
a container which never reaps), and so does the test process itself."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from pathlib import Path

import psutil


def live(match: Callable[[psutil.Process], bool]) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if proc.pid != os.getpid() and proc.status() != psutil.STATUS_ZOMBIE and match(proc):
                found.append(proc)
    return found


def running_under(root: Path) -> list[psutil.Process]:
    """Live processes whose working directory is under root (found by directory, not pid: servers may run in a pid
    namespace of their own, so the pids they report are not the host's)."""
    return live(lambda proc: Path(proc.cwd()).is_relative_to(root))


def naming(marker: str) -> list[psutil.Process]:
    """Live processes with marker in their command line."""
    return live(lambda proc: marker in " ".join(proc.cmdline()))


def gone_within(find: Callable[[], list[psutil.Process]], seconds: float = 5.0) -> list[psutil.Process]:
    """For kills the kernel delivers (a parent-death signal after a SIGKILL): what is still alive after seconds."""
    deadline = time.monotonic() + seconds
    while (left := find()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left
