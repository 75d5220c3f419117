"""A grading's scratch directory and its private copy of the workspace.

Grading never works on the workspace itself: the trial's snapshot is the agent's work, and the code being graded
(its build backend, its npm scripts, its server) must not be able to rewrite it. Every stage works on a copy made
at the start, without what must not be trusted or followed: the agent's own node_modules, .venv and .git, special
files, and symlinks that leave the workspace (a `requirements.txt -> /checkout/.env` must not carry a host file
into a record; the names of the dropped links are kept so the install stage can say why it refuses). Sparse files
stay sparse, and a workspace whose files add up to more than MCP_EVALS_WORKSPACE_CAP_MB (a sparse file at its full
size: every reader sees that much) is refused (the install stage fails, naming the cap and the file that crossed
it) instead of filling the scratch or a reader's memory.

Scratch directories live under cache_dir()/scratch/grade-*; each holds an flock for as long as its grading runs,
so a grading killed with SIGKILL leaves a directory whose lock is free, and the next grading removes it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from mcp_evals_pipeline.file_copy import copy_sparse, disk_bytes, special_kind
from mcp_evals_pipeline.paths import cache_dir

SKIPPED_DIRS = frozenset({"node_modules", ".git", ".venv", "__pycache__"})
LOCK_FILE = ".grading.lock"
# A directory without a lock file younger than this is never pruned: its grading may not have made it yet.
PRUNE_GRACE_S = 60.0
LOCK_GRACE_S = 5.0


def scratch_base() -> Path:
    base = cache_dir() / "scratch"
    base.mkdir(parents=True, exist_ok=True)
    return base


@dataclass(frozen=True)
class Workdir:
    """What a grading works in: `copy`, its private copy of the workspace (where every stage reads and the server
    runs), `scratch` (the only path its boxes may write), the relative paths of the links the copy left out
    because they leave the workspace, and what each step ran in (step -> box description), filled as they run."""

    copy: Path
    scratch: Path
    outside: tuple[str, ...] = ()
    isolation: dict[str, str] = field(default_factory=dict)
    special: tuple[str, ...] = ()  # FIFOs, sockets and devices the copy left out, as "<path> (<kind>)"


@contextlib.contextmanager
def workdir_for(workspace: Path) -> Iterator[Workdir]:
    """A scratch with a copy of workspace, removed on exit (what a grading does; for a runtime used alone)."""
    scratch = Scratch()
    try:
        copied = copy_workspace(workspace, scratch.root / "workspace")
        yield Workdir(scratch.root / "workspace", scratch.root, tuple(copied.outside),
                      special=tuple(copied.special))
    finally:
        scratch.close()


class Scratch:
    """`root` (0711: the server's uid traverses it to its run directory, lists nothing), locked until close()."""

    def __init__(self) -> None:
        prune_abandoned()
        self.root = Path(tempfile.mkdtemp(prefix="grade-", dir=scratch_base()))
        self.root.chmod(0o711)
        self._lock = os.open(self.root / LOCK_FILE, os.O_CREAT | os.O_RDWR, 0o600)
        fcntl.flock(self._lock, fcntl.LOCK_EX)

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
        with contextlib.suppress(OSError):
            os.close(self._lock)


def prune_abandoned(base: Path | None = None) -> list[Path]:
    """Remove the scratch of gradings that died (their lock is free); returns what was removed. A lock file is
    taken the moment it is made, so a free one older than LOCK_GRACE_S is a dead grading's; a directory without
    one is left PRUNE_GRACE_S to take it."""
    removed = []
    base = base or scratch_base()
    now = time.time()
    for entry in base.glob("grade-*"):
        lock = entry / LOCK_FILE
        try:
            fd = os.open(lock, os.O_RDWR)
        except FileNotFoundError:
            with contextlib.suppress(OSError):
                if now - entry.stat().st_mtime >= PRUNE_GRACE_S:
                    shutil.rmtree(entry, ignore_errors=True)
                    removed.append(entry)
            continue
        except OSError:
            continue
        try:
            if now - os.fstat(fd).st_mtime < LOCK_GRACE_S:
                continue
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            continue  # a live grading holds it
        else:
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
        finally:
            os.close(fd)
    return removed


CAP_ENV = "MCP_EVALS_WORKSPACE_CAP_MB"
DEFAULT_CAP_MB = 512


class WorkspaceTooLarge(ValueError):
    """The workspace occupies more disk than a grading copies: refused (contract.install), never half-graded."""


def workspace_cap_bytes() -> int:
    value = os.environ.get(CAP_ENV)
    try:
        mb = int(value) if value else DEFAULT_CAP_MB
    except ValueError as exc:
        raise ValueError(f"{CAP_ENV}={value!r} is not a whole number of MB") from exc
    return mb * 1024 * 1024


@dataclass(frozen=True)
class Copied:
    """What copy_workspace left out: links leaving the workspace, and special files (as "<path> (<kind>)")."""

    outside: list[str]
    special: list[str]


def copy_workspace(workspace: Path, dst: Path, cap_bytes: int | None = None) -> Copied:
    """Copy workspace to dst (sparse files as sparse). Raises WorkspaceTooLarge, naming the file that crossed it,
    before the files copied would add up to more than cap_bytes (default: MCP_EVALS_WORKSPACE_CAP_MB), each counted
    at the larger of its size and its blocks on disk."""
    workspace = workspace.resolve()
    cap = workspace_cap_bytes() if cap_bytes is None else cap_bytes
    outside: list[str] = []
    special: list[str] = []
    used = 0

    def walk(src: Path, out: Path) -> None:
        nonlocal used
        out.mkdir(mode=0o755)
        with os.scandir(src) as entries:
            for entry in entries:
                path = Path(entry.path)
                rel = path.relative_to(workspace).as_posix()
                target = out / entry.name
                st = entry.stat(follow_symlinks=False)
                mode = st.st_mode
                if stat.S_ISLNK(mode):
                    resolved = path.resolve()
                    if resolved == workspace or not resolved.is_relative_to(workspace):
                        outside.append(rel)
                    else:  # relative, so it points into the copy, not back into the workspace
                        os.symlink(os.path.relpath(resolved, path.parent), target)
                elif stat.S_ISDIR(mode):
                    if entry.name not in SKIPPED_DIRS:
                        walk(path, target)
                elif stat.S_ISREG(mode):
                    # Charged at its size even when sparse: every stage that reads it (the source scan, a
                    # byte-compile, a lockfile copy) reads the holes as zeros; its copy stays sparse all the same.
                    size = max(st.st_size, disk_bytes(st))
                    used += size
                    if used > cap:
                        raise WorkspaceTooLarge(
                            f"the workspace holds more than the {cap // (1024 * 1024)} MB a grading copies "
                            f"({CAP_ENV}), reached at {rel} ({size} bytes): refused")
                    copy_sparse(path, target)
                else:  # never opened: opening a FIFO blocks, a device may read forever; not an agent's work
                    special.append(f"{rel} ({special_kind(mode)})")

    walk(workspace, dst)
    return Copied(outside, special)
