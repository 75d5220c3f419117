"""The `local` backend: a fresh directory, a sanitized environment, a process group killed on every path and a
wall-clock limit per command. No filesystem or network isolation: point it only at agents you trust (the
hardened and docker backends are for the rest). Never a default: only asked for by name (sandbox/choice.py), and
then recorded as UNBOXED."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from mcp_evals_pipeline import procs
from mcp_evals_pipeline.sandbox.base import CommandResult, Sandbox

OUTPUT_LIMIT = 30_000


class LocalSandbox(Sandbox):
    backend = "local"
    isolation = "none (process group, sanitized env, time limits)"

    def __init__(self, workspace: Path, extra_env: dict[str, str] | None = None):
        super().__init__(workspace)
        self._scratch = Path(tempfile.mkdtemp(prefix="sandbox-"))
        (self._scratch / "home").mkdir()
        (self._scratch / "tmp").mkdir()
        self._env = procs.sanitized_env(home=self._scratch / "home", tmp=self._scratch / "tmp", extra=extra_env)
        self._live: list[subprocess.Popen[bytes]] = []

    def run(self, command: str, timeout_s: float) -> CommandResult:
        log = self._scratch / f"cmd-{time.monotonic_ns()}.log"
        started = time.monotonic()
        proc = procs.spawn(["/bin/bash", "-c", command], cwd=self.workspace, env=self._env, log_path=log)
        # A finished command may leave a backgrounded server running for the agent's next command; its group
        # stays tracked and dies in close().
        self._live.append(proc)
        timed_out, output = procs.finish(proc, timeout_s, log, OUTPUT_LIMIT)
        return CommandResult(
            exit_code=None if timed_out else proc.returncode,
            output=output,
            timed_out=timed_out,
            duration_ms=int((time.monotonic() - started) * 1000),
        )

    def close(self) -> None:
        for proc in list(self._live):
            procs.kill_tree(proc)
        self._live.clear()
        shutil.rmtree(self._scratch, ignore_errors=True)
