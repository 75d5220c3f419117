"""Typecheck results remembered by everything the compiler reads, so identical work is not typechecked twice.

tsc is deterministic, and in its box it reads only the workspace copy, the shared node_modules set (read-only, sealed,
immutable once built) and the pinned toolchain. So the same bytes under the same config, compiler and set give the
same diagnostics. The replay agent writes the same files in every trial that plays a recording, and a batch grades
them again and again: with this cache the typecheck of an mcp-use workspace (3.5-4 s of tsc) runs once per distinct
workspace per day. The verdict never depends on whether the cache answered. A trial records that its typecheck was a
remembered result, and of which box.

The key covers what tsc can see: every file, directory and symlink of the copy (path, kind, bytes or link text;
tsconfig.json and the grader's default config are files of the copy too), the compiler (the toolchain's root or the
set's own TypeScript with its version), and the set's identity (its content-keyed path and the inode and ctime of
its directory, so a set rebuilt under the same key never inherits another set's answers). The copy's root
`node_modules` must be the empty mount point of the set: anything else is not cached. Only complete answers are kept
(a compiler that timed out or crashed is asked again next time). The harness writes entries after the box has
finished; no box can reach this directory. Entries live per UTC day and older days are pruned, as the sets are.
MCP_EVALS_TSC_CACHE=0 turns it off.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import shutil
import stat
import tempfile
from pathlib import Path

from mcp_evals_pipeline import build_cache
from mcp_evals_pipeline.paths import cache_dir

CACHE_ENV = "MCP_EVALS_TSC_CACHE"
FORMAT = b"tsc-cache-1"
MAX_HASHED_BYTES = 64 * 1024 * 1024  # a larger copy is typechecked every time rather than hashed


def enabled() -> bool:
    return os.environ.get(CACHE_ENV, "1") != "0"


def _root() -> Path:
    return cache_dir() / "tsc-results"


def _tree_digest(copy: Path) -> str | None:
    """Every entry of the copy in a fixed order; None when it cannot be keyed (a non-empty root node_modules, a
    special file, too many bytes)."""
    digest = hashlib.sha256()
    hashed = 0
    mount = copy / "node_modules"
    if mount.is_symlink() or (mount.exists() and (not mount.is_dir() or any(mount.iterdir()))):
        return None
    for dirpath, dirnames, filenames in os.walk(copy):
        dirnames.sort()
        here = Path(dirpath)
        if here == copy and "node_modules" in dirnames:
            dirnames.remove("node_modules")  # the set's mount point: keyed by the set's identity
        for name in sorted([*dirnames, *filenames]):
            path = here / name
            rel = path.relative_to(copy).as_posix().encode()
            st = path.lstat()
            if stat.S_ISLNK(st.st_mode):
                digest.update(b"L\0" + rel + b"\0" + os.readlink(path).encode() + b"\0")
            elif stat.S_ISDIR(st.st_mode):
                digest.update(b"D\0" + rel + b"\0")
            elif stat.S_ISREG(st.st_mode):
                hashed += st.st_size
                if hashed > MAX_HASHED_BYTES:
                    return None
                digest.update(b"F\0" + rel + b"\0" + hashlib.sha256(path.read_bytes()).digest())
            else:
                return None
    return digest.hexdigest()


def _set_identity(node_modules: Path) -> str:
    product = node_modules.parent
    st = product.stat()
    return f"{product}\0{st.st_dev}:{st.st_ino}:{st.st_ctime_ns}"


def key_for(copy: Path, compiler: str, node_modules: Path) -> str | None:
    """The entry's key, or None when this typecheck is not to be remembered."""
    if not enabled():
        return None
    try:
        tree = _tree_digest(copy)
        identity = _set_identity(node_modules)
    except OSError:
        return None
    if tree is None:
        return None
    return hashlib.sha256(b"\0".join([FORMAT, compiler.encode(), identity.encode(), tree.encode()])).hexdigest()


def _entry(key: str) -> Path:
    return _root() / build_cache.today_key() / f"{key}.json"


def lookup(key: str | None) -> tuple[list[str], str] | None:
    """(problems, the box that found them) remembered for `key` today."""
    if key is None:
        return None
    try:
        data = json.loads(_entry(key).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    problems, box = data.get("problems") if isinstance(data, dict) else None, data.get("box")
    if not isinstance(problems, list) or not all(isinstance(p, str) for p in problems) or not isinstance(box, str):
        return None
    return problems, box


def remember(key: str | None, problems: list[str], box: str, complete: bool) -> None:
    """Keep a complete answer (tsc ran to its end); written atomically, so a reader sees all of it or nothing."""
    if key is None or not complete:
        return
    entry = _entry(key)
    with contextlib.suppress(OSError):
        entry.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=entry.parent, prefix=".tmp-")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump({"problems": problems, "box": box}, out)
        os.replace(tmp, entry)
        _prune(entry.parent.name)


def _prune(today: str) -> None:
    """Remove the days older than the node_modules sets' KEEP_DAYS (their answers name sets that are pruned too)."""
    for day in _root().iterdir():
        try:
            age = (dt.date.fromisoformat(today) - dt.date.fromisoformat(day.name)).days
        except ValueError:
            continue
        if day.is_dir() and age >= build_cache.KEEP_DAYS:
            shutil.rmtree(day, ignore_errors=True)
