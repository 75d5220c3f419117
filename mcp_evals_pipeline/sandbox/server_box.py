"""The box the graded server runs in.

The server under test is code an untrusted agent wrote: it runs in a bubblewrap box of its own (detected, as for
the hardened sandbox), as an unprivileged uid (nobody, no capabilities, no_new_privs: /etc/shadow and every
root-only file stay unreadable). It sees the system directories and its runtime (interpreter, environment,
toolchain; a shared node_modules bound over the run directory's) read-only, its run directory (the grading's copy
of the workspace) and its HOME/TMPDIR read-write, and nothing else of the host's filesystem: not the checkout with
its `.env`, not HOME, not the other gradings' scratch, not the shared caches for writing. It gets its own pid, ipc
and uts namespaces. The network stays the host's: the grader, the upstream fakes and the OAuth IdP reach it and it
reaches them on the host's loopback.

Fail closed: without a box the server does not start (grader/boxes.py: infra.sandbox), unless the debugging
opt-out MCP_EVALS_UNSAFE_UNBOXED_GRADING=1 is set (it then gets a pid namespace, procs.pid_namespace_prefix, and
the record says UNBOXED). MCP_EVALS_GRADER_BOX=0 disables the box as a host without bubblewrap would.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

from mcp_evals_pipeline import procs
from mcp_evals_pipeline.grader.boxes import SWITCH_ENV, UNBOXED, refuse, unboxed_allowed
from mcp_evals_pipeline.sandbox.base import chown_tree
from mcp_evals_pipeline.sandbox.hardened import NOBODY, SYSTEM_DIRS, _mount_args, detect

BOX_DESCRIPTION = (f"bwrap: ro system dirs and runtime; rw run dir, HOME and TMPDIR; pid/ipc/uts ns; uid={NOBODY}, "
                   "caps dropped, no_new_privs")
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
    return os.environ.get(SWITCH_ENV, "1") != "0" and os.geteuid() == 0 and _bwrap() is not None


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
           ro_binds: Iterable[tuple[Path, Path]] = ()) -> tuple[list[str], str]:
    """(command prefix, description) to start the graded server with; raises NoBox where no box can be made
    (unless the debugging opt-out is set). The writable paths are handed to the server's uid. Nesting decides the
    order of the mounts (see _binds): a read-only node_modules inside the writable run directory stays read-only."""
    if not available():
        if not unboxed_allowed():
            why = f"{SWITCH_ENV}=0" if os.environ.get(SWITCH_ENV) == "0" else (
                "not root" if os.geteuid() != 0 else "; ".join(detect().missing) or "bubblewrap does not run here")
            raise refuse(why)
        return list(procs.pid_namespace_prefix()), UNBOXED
    writable = _outermost(writable)
    for path in writable:
        path.mkdir(parents=True, exist_ok=True)
        chown_tree(path, NOBODY, NOBODY)
    readable = [p.resolve() for p in readable]
    inside_writable = [p for p in readable if any(p.is_relative_to(w) for w in writable)]
    elsewhere = [p for p in _outermost(p for p in readable if p not in inside_writable)
                 if p.parts[1:2] and p.parts[1] not in SYSTEM_DIRS]  # system dirs are mounted already
    mounts = [("--ro-bind", p) for p in elsewhere + inside_writable] + [("--bind", p) for p in writable]
    binds = [arg for src, dst in ro_binds for arg in ("--ro-bind", str(src), str(dst))]
    args = [
        _bwrap() or "bwrap", *_mount_args(), *_binds(mounts, set()), *binds,
        "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent", "--new-session",
        "--chdir", str(cwd), "--", *_DROP,
    ]
    return args, BOX_DESCRIPTION
