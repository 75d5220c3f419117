"""A long step is never silent: a line every few seconds while nothing else was said.

A first `make run` builds the grader's toolchain and environments inside its first gradings, and a live agent's
trial takes minutes: without this a newcomer watched a still screen and could not tell progress from a hang.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

EVERY_S = 10.0


class Heartbeat:
    """`said()` when the step printed a line of its own; `beat()` yields the line to print after `every` seconds
    of silence (the step's own n of N and the time elapsed)."""

    def __init__(self, echo: Callable[[str], None], status: Callable[[float], str], every: float = EVERY_S):
        self._echo, self._status, self._every = echo, status, every
        self.started = self._last = time.monotonic()
        self._stop = threading.Event()

    def said(self) -> None:
        self._last = time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def _run(self) -> None:
        while not self._stop.wait(min(1.0, self._every)):
            now = time.monotonic()
            if now - self._last >= self._every:
                self._last = now
                self._echo(self._status(now - self.started))

    @contextlib.contextmanager
    def running(self) -> Iterator[Heartbeat]:
        thread = threading.Thread(target=self._run, name="heartbeat", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            thread.join()


def heartbeat(echo: Callable[[str], None], status: Callable[[float], str],
              every: float = EVERY_S) -> contextlib.AbstractContextManager[Heartbeat]:
    """`with heartbeat(echo, lambda s: f"... {s:.0f}s elapsed") as beat:` ... `beat.said()` after each own line."""
    return Heartbeat(echo, status, every).running()
