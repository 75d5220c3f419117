"""Copying an agent's files without trusting them: what the grader's copy and `regrade` share.

An agent's workspace may hold a FIFO (opening it blocks), a socket or a device (opening /dev/zero's twin reads
forever): those are never opened, only named. A sparse file (2 GB of holes in a few KB of disk) is copied as sparse,
and what a copy costs is counted in the blocks it really occupies, so a cap on it measures what the disk pays.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Collection
from pathlib import Path

BLOCK = 512  # st_blocks is counted in 512-byte units on every platform we run on
CHUNK = 1 << 20


def special_kind(mode: int) -> str | None:
    """"FIFO", "socket" or "device" for a file that is never opened, None for a regular file, directory or link."""
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return None


def disk_bytes(st: os.stat_result) -> int:
    """What a file really occupies (its allocated blocks: a sparse file's holes cost nothing)."""
    return st.st_blocks * BLOCK


def copy_sparse(src: Path, dst: Path) -> None:
    """Copy a regular file's data regions only (holes stay holes), then its mode and times; never follows a link."""
    fd_in = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        st = os.fstat(fd_in)
        if not stat.S_ISREG(st.st_mode):  # swapped for something else since it was listed: never read it
            raise OSError(f"{src} is no longer a regular file")
        fd_out = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            for start, end in _data_regions(fd_in, st.st_size):
                os.lseek(fd_in, start, os.SEEK_SET)
                os.lseek(fd_out, start, os.SEEK_SET)
                left = end - start
                while left > 0:
                    chunk = os.read(fd_in, min(CHUNK, left))
                    if not chunk:
                        break
                    os.write(fd_out, chunk)
                    left -= len(chunk)
            os.ftruncate(fd_out, st.st_size)  # the trailing hole, and the size
        finally:
            os.close(fd_out)
    finally:
        os.close(fd_in)
    shutil.copystat(src, dst, follow_symlinks=False)


def _data_regions(fd: int, size: int) -> list[tuple[int, int]]:
    """(start, end) of every region holding data; the whole file where the filesystem cannot tell holes apart."""
    regions = []
    offset = 0
    try:
        while offset < size:
            try:
                start = os.lseek(fd, offset, os.SEEK_DATA)
            except OSError:  # ENXIO: only a hole is left
                break
            end = os.lseek(fd, start, os.SEEK_HOLE)
            regions.append((start, end))
            offset = end
    except (AttributeError, OSError):
        return [(0, size)]
    return regions


def copy_tree(src: Path, dst: Path, *, leave: Collection[str] = ()) -> list[str]:
    """Copy a directory as it is (links as links, sparse files as sparse), leaving out FIFOs, sockets and devices
    and the top-level names in `leave`; returns each special file left out as "<relative path> (<kind>)"."""
    skipped: list[str] = []

    def walk(here: Path, out: Path) -> None:
        out.mkdir()
        with os.scandir(here) as entries:
            for entry in entries:
                path, target = Path(entry.path), out / entry.name
                if here == src and entry.name in leave:
                    continue
                mode = entry.stat(follow_symlinks=False).st_mode
                if stat.S_ISLNK(mode):
                    os.symlink(os.readlink(path), target)
                elif stat.S_ISDIR(mode):
                    walk(path, target)
                elif stat.S_ISREG(mode):
                    copy_sparse(path, target)
                else:
                    skipped.append(f"{path.relative_to(src).as_posix()} ({special_kind(mode) or 'special file'})")
        shutil.copystat(here, out, follow_symlinks=False)

    walk(src, dst)
    return skipped
