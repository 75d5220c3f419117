"""Long-lived TypeScript compilers for the typecheck stage: the same tsc, without parsing node_modules every time.

A one-shot `tsc --noEmit` over an mcp-use workspace spends ~3 of its ~4 s reading, parsing and binding the same
declaration files of the same node_modules set (339 files, 142k lines for mcp-use 2.5). A worker (tsc_worker.cjs)
keeps those, one worker per (node_modules set, TypeScript), and checks one job at a time with a new program and
checker: the diagnostics are tsc's, in its order and format, and parse_tsc_output reads them as before.

Isolation. A worker runs in a box of its own without network (sandbox/hardened.py): the set and the toolchain
read-only, and one writable directory, `ws`, that holds the current job's files and nothing else: before each job
the previous one's are removed, so no job can name another's files, and jobs on one worker never overlap. The
compiler reads the workspace and never runs any of it (tsc loads no plugins), as before; what is new is that a job
could leave state in the compiler, so nothing of a job is reused: only files under the read-only set and the
toolchain are cached (they cannot differ between jobs), and every other file gets a version of its own per job.

Trust. Any trouble with a worker (it cannot start, crashes, answers garbage) costs speed, not a verdict: the caller
falls back to the one-shot tsc, which stays the reference. A job that runs past the timeout kills its worker and
times out as tsc would. MCP_EVALS_TSC_WORKERS=0 turns workers off (as MCP_EVALS_GRADER_BOX=docker does); workers
are per process and die with it.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from mcp_evals_pipeline.grader.scratch import Scratch, copy_workspace
from mcp_evals_pipeline.node_toolchain import Toolchain

WORKERS_ENV = "MCP_EVALS_TSC_WORKERS"
PER_KEY = 2  # verify-tasks grades three at a time on two cores: two compilers per set keep them busy
MAX_JOBS = 200  # then a fresh worker: bounds what the compiler's caches can grow to
START_TIMEOUT_S = 60.0
SCRIPT = Path(__file__).with_name("tsc_worker.cjs")
API = Path("typescript") / "lib" / "typescript.js"  # what the worker loads, under a node_modules


def max_workers() -> int:
    from mcp_evals_pipeline.grader.boxes import box_kind

    if box_kind() == "docker":  # the workers are bwrap boxes; docker grading runs the one-shot tsc in its box
        return 0
    try:
        return max(0, int(os.environ.get(WORKERS_ENV, "4")))
    except ValueError:
        return 4


@dataclass(frozen=True)
class WorkerKey:
    node_modules: Path  # the shared set, bound read-only at <ws>/node_modules
    typescript: str  # "toolchain", or "own": the set's typescript/lib/typescript.js
    toolchain_root: Path


@dataclass
class Answer:
    output: str  # tsc's --pretty false output
    exit_code: int | None  # None: the job ran past its timeout


class WorkerFailed(Exception):
    """The worker could not give an answer; the caller falls back to the one-shot tsc."""


class TscWorker:
    def __init__(self, key: WorkerKey, toolchain: Toolchain):
        from mcp_evals_pipeline.sandbox.hardened import HardenedSandbox

        self.key = key
        self.jobs = 0
        self._buffer = b""
        self._scratch = Scratch()
        root = self._scratch.root
        self.ws = root / "ws"
        (self.ws / "node_modules").mkdir(parents=True)
        # The script and the worker's stderr live outside the writable root, read-only in the box: the root holds
        # the job's files only, as a one-shot tsc's scratch does (a tsconfig that reaches `..` finds the same).
        self._bin = Path(tempfile.mkdtemp(prefix="tsc-worker-bin-"))
        self._bin.chmod(0o755)
        shutil.copy2(SCRIPT, self._bin / SCRIPT.name)
        (self._bin / SCRIPT.name).chmod(0o644)
        typescript = (self.ws / "node_modules" if key.typescript == "own" else toolchain.node_modules) / API
        try:
            self.box = HardenedSandbox(root, net="none", ro_paths=[toolchain.root, self._bin], pids=64,
                                       ro_binds=[(key.node_modules, self.ws / "node_modules")])
        except BaseException:
            self._scratch.close()
            shutil.rmtree(self._bin, ignore_errors=True)
            raise
        self.description = f"{self.box.isolation} (a long-lived tsc, one job at a time)"
        try:
            self.proc = self.box.spawn(f"cd {self.ws} && exec {toolchain.node} {self._bin / SCRIPT.name} "
                                       f"{typescript}", self._bin / "stderr.log")
            ready = self._read(time.monotonic() + START_TIMEOUT_S)
            if ready is None or not json.loads(ready).get("ready"):
                raise WorkerFailed(f"the worker did not start: {self._stderr()}")
        except BaseException:
            self.close()
            raise

    def _stderr(self) -> str:
        with contextlib.suppress(OSError):
            return (self._bin / "stderr.log").read_text(errors="replace")[-800:]
        return ""

    def _read(self, deadline: float) -> bytes | None:
        """One line of the worker's stdout, or None at the deadline."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    raise WorkerFailed(f"the worker exited: {self._stderr()}")
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def _stage(self, copy: Path) -> None:
        """The job's files, and only those, in ws (node_modules stays: it is where the set is bound)."""
        from mcp_evals_pipeline.sandbox.base import chown_tree

        for entry in self.ws.iterdir():
            if entry.name != "node_modules":
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()
        staging = self._scratch.root / "staging"
        shutil.rmtree(staging, ignore_errors=True)
        copy_workspace(copy, staging)
        for entry in staging.iterdir():
            entry.rename(self.ws / entry.name)
            chown_tree(self.ws / entry.name, self.box.uid, self.box.uid)
        staging.rmdir()

    def check(self, copy: Path, config: Path, timeout_s: float) -> Answer:
        """tsc over `config` (a path inside `copy`) with `copy` as the project directory, as tsc -p would."""
        assert self.proc.stdin is not None
        self.jobs += 1
        self._stage(copy)
        request = {"cwd": str(self.ws), "config": str(self.ws / config.relative_to(copy)),
                   "shared": [str(self.ws / "node_modules"), str(self.key.toolchain_root)]}
        try:
            self.proc.stdin.write(json.dumps(request).encode() + b"\n")
            self.proc.stdin.flush()
        except OSError as exc:
            raise WorkerFailed(f"the worker is gone: {exc}") from exc
        line = self._read(time.monotonic() + timeout_s)
        if line is None:
            return Answer("", None)
        try:
            answer = json.loads(line)
            if "crashed" in answer:
                raise WorkerFailed(f"the worker crashed: {answer['crashed']}")
            # Paths in messages are the worker's: name the job's copy, as the one-shot tsc would.
            return Answer(str(answer["output"]).replace(str(self.ws), str(copy)), int(answer["exitCode"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise WorkerFailed(f"the worker answered {line[:200]!r}") from exc

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.box.close()
        self._scratch.close()
        shutil.rmtree(self._bin, ignore_errors=True)


class _Pool:
    """Idle and busy workers by key; at most PER_KEY per key and max_workers() in all (idle ones of other keys
    are closed, oldest first, to make room)."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._idle: list[TscWorker] = []  # oldest first
        self._busy: list[TscWorker] = []

    def acquire(self, key: WorkerKey, toolchain: Toolchain) -> TscWorker | None:
        with self._lock:
            while True:
                mine = [w for w in self._idle if w.key == key]
                if mine:
                    worker = mine[-1]
                    self._idle.remove(worker)
                    self._busy.append(worker)
                    return worker
                same = sum(w.key == key for w in self._busy)
                if same < PER_KEY:
                    while self._idle and len(self._idle) + len(self._busy) >= max_workers():
                        self._idle.pop(0).close()
                    if len(self._idle) + len(self._busy) < max_workers():
                        break
                if same == 0:
                    return None  # every worker is busy with other sets: the one-shot tsc, not a wait
                self._lock.wait()
        try:
            worker = TscWorker(key, toolchain)
        except Exception:
            return None
        with self._lock:
            self._busy.append(worker)
        return worker

    def release(self, worker: TscWorker, healthy: bool) -> None:
        with self._lock:
            self._busy.remove(worker)
            if healthy and worker.jobs < MAX_JOBS:
                self._idle.append(worker)
            else:
                worker.close()
            self._lock.notify_all()

    def close_all(self) -> None:
        with self._lock:
            for worker in [*self._idle, *self._busy]:
                worker.close()
            self._idle.clear()
            self._busy.clear()
            self._lock.notify_all()


POOL = _Pool()
atexit.register(POOL.close_all)


def check(key: WorkerKey, toolchain: Toolchain, copy: Path, config: Path,
          timeout_s: float) -> tuple[Answer, str] | None:
    """tsc over `config` on a worker: (its answer, the worker's box) or None when no worker could answer (the
    caller runs the one-shot tsc)."""
    from mcp_evals_pipeline.grader.boxes import boxes_enabled

    if max_workers() == 0 or not boxes_enabled():
        return None
    if key.typescript == "own" and not (key.node_modules / API).is_file():
        return None  # TypeScript >= 7 is a native compiler without the JavaScript API a worker keeps: one-shot
    worker = POOL.acquire(key, toolchain)
    if worker is None:
        return None
    healthy = False
    try:
        answer = worker.check(copy, config, timeout_s)
        healthy = answer.exit_code is not None
        return answer, worker.description
    except (WorkerFailed, OSError):
        return None
    finally:
        POOL.release(worker, healthy)
