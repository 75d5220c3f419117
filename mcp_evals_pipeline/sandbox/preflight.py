"""Whether this host can box agent-written code at all, asked once before a batch does any work: without the
answer every grading of the batch would end as infra.sandbox, minutes later, for the same reason. Its own module
because it asks both the grader's switch (grader.boxes) and the server box's engine check (sandbox.server_box),
which itself reads grader.boxes."""

from __future__ import annotations

from mcp_evals_pipeline.grader.boxes import SWITCH_ENV, box_kind, unboxed_allowed
from mcp_evals_pipeline.sandbox import server_box
from mcp_evals_pipeline.sandbox.hardened import detect


def preflight() -> str | None:
    """Why no box for agent-written code can be made on this host, in one line with the ways out; None when one
    can (or the debugging opt-out is set). Checked before a batch does any work: without it every grading of the
    batch would end as infra.sandbox."""
    if unboxed_allowed():
        return None
    kind = box_kind()
    if kind == "off":
        why = f"{SWITCH_ENV}=0 turns the boxes off (unset it)"
    elif kind == "docker":
        why = server_box.docker_problem() or ""
    else:
        # cgroups are not needed to box: the limits are applied where they exist
        why = "; ".join(m for m in detect().missing if "cgroup" not in m)
    if not why:
        return None
    return (f"grading runs agent-written code only in a box, and none can be made here: {why}. Ways out: install "
            f"it (as root: scripts/install_boxes.sh), or {SWITCH_ENV}=docker to box it in containers on a Docker "
            "engine (make docker-up)")
