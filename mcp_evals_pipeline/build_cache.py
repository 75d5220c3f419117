"""Shared build products (python environments, node_modules) keyed by their inputs: built once, sealed, promoted.

A build runs in an install box into a private staging directory of the grading's scratch; only after it finished
is the staging directory sealed (owned by root, no group/other write: no box uid can write it afterwards) and
renamed to its key, under the key's lock. Nothing a later box runs can reach a promoted product for writing (the
boxes mount it read-only or not at all), so no trial can change what the next grading of the same inputs gets.
Products are keyed by the UTC day too (unpinned requirements re-resolve daily) and pruned after `KEEP_DAYS`.

The one helper for every cached build of the project (python environments, node_modules, the pinned Node toolchain,
the agent CLIs): lock, completion marker, staging, atomic promotion, pruning.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import shutil
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

from filelock import FileLock

COMPLETE_MARKER = ".mcp-evals-complete"
KEEP_DAYS = 2


def today_key(today: dt.date | None = None) -> str:
    return (today or dt.datetime.now(dt.UTC).date()).isoformat()


def seal(root: Path) -> None:
    """Root-owned and not writable by group or others (symlinks only re-owned: their mode means nothing)."""
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames, None]:
            path = os.path.join(dirpath, name) if name is not None else dirpath
            with contextlib.suppress(FileNotFoundError):
                st = os.lstat(path)
                if st.st_uid != 0 or st.st_gid != 0:
                    os.chown(path, 0, 0, follow_symlinks=False)
                if not stat.S_ISLNK(st.st_mode) and st.st_mode & 0o022:
                    os.chmod(path, stat.S_IMODE(st.st_mode) & ~0o022)


def cached_build(cache: Path, key: str, build: Callable[[Path], None], *, stage: Path | None = None,
                 today: dt.date | None = None, dated: bool = True, sealed: bool = True,
                 marker: str | None = None) -> tuple[Path, bool]:
    """(cache/key, reused): build(stage) unless a complete product exists; raises what build raises.

    `stage`: where the build writes (default a fresh `<key>-building-*` beside the product; leftovers of a killed
    build are removed first). `dated`: the marker holds the UTC day and products older than KEEP_DAYS are pruned
    (pinned products, such as the toolchain, are not). `sealed`: root-owned and not group/other-writable before
    promotion (when running as root). `marker`: what the completion marker says (default the day)."""
    cache.mkdir(parents=True, exist_ok=True)
    root = cache / key
    if (root / COMPLETE_MARKER).exists():  # the common case costs a stat, not a lock
        return root, True
    with FileLock(str(root) + ".lock"):
        if (root / COMPLETE_MARKER).exists():
            return root, True
        shutil.rmtree(root, ignore_errors=True)
        if stage is None:
            for leftover in cache.glob(f"{key}-building-*"):  # a build that was killed
                shutil.rmtree(leftover, ignore_errors=True)
            stage = Path(tempfile.mkdtemp(prefix=f"{key}-building-", dir=cache))
        shutil.rmtree(stage, ignore_errors=True)
        try:
            build(stage)
            if sealed and os.geteuid() == 0:
                seal(stage)
            (stage / COMPLETE_MARKER).write_text((marker if marker is not None else today_key(today)) + "\n")
            os.rename(stage, root)  # relative links inside (npm's .bin) survive the move
        except BaseException:
            shutil.rmtree(stage, ignore_errors=True)
            raise
    if dated:
        prune_stale(cache)
    return root, False


def prune_stale(cache: Path, keep_days: int = KEEP_DAYS) -> None:
    """Drop products built more than keep_days ago (a grading still using one started days ago)."""
    cutoff = (dt.datetime.now(dt.UTC).date() - dt.timedelta(days=keep_days)).isoformat()
    for marker in cache.glob(f"*/{COMPLETE_MARKER}"):
        try:
            built = marker.read_text().strip()
        except OSError:
            continue
        if built < cutoff:
            shutil.rmtree(marker.parent, ignore_errors=True)
