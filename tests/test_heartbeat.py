"""A long step is never silent: the heartbeat speaks after a silence, and only then."""

from __future__ import annotations

import time

from mcp_evals_pipeline.heartbeat import heartbeat


def test_a_silent_step_gets_status_lines_and_a_talking_one_none() -> None:
    said: list[str] = []
    with heartbeat(said.append, lambda s: f"... {s:.1f}s elapsed", every=0.2):
        time.sleep(0.75)
    assert 2 <= len(said) <= 4 and all(line.endswith("s elapsed") for line in said), said
    said.clear()
    with heartbeat(said.append, lambda s: "silence", every=0.5) as beat:
        for _ in range(8):  # a line of its own every 0.1 s: never silent for 0.5 s
            time.sleep(0.1)
            beat.said()
    assert said == []
