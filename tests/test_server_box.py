"""The graded server runs in a box of its own (sandbox/server_box.py): a real server, graded by the real grader,
reports what it can see and touch through a tool, and the grader's own expectations check the answer."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest

from mcp_evals_pipeline.contracts.task import TaskContract
from mcp_evals_pipeline.grader import grade_workspace_sync
from mcp_evals_pipeline.grader.boxes import UNBOXED, UNBOXED_ENV, NoBox
from mcp_evals_pipeline.sandbox import server_box

from .conftest import REPO, docker_leftovers, write_tree

# Only the tests that start a box need one; the fail-closed tests run everywhere.
needs_box = pytest.mark.skipif(not server_box.available(),
                               reason="bubblewrap with a pid namespace is not available on this host")

PROBING_SERVER = '''
import json, os, sys
from pathlib import Path
from mcp.server.mcpserver import MCPServer

mcp = MCPServer("prober")


def writable(path):
    try:
        Path(path).write_text("poisoned")
        Path(path).unlink()
        return True
    except OSError:
        return False


@mcp.tool()
def probe() -> str:
    paths = json.loads(Path("paths.json").read_text())
    return json.dumps({
        "checkout_visible": os.path.exists(paths["checkout_file"]),
        "shared_env_writable": writable(Path(sys.prefix) / "poisoned.txt"),
        "cwd_writable": writable("state.txt"),
        "tmp_writable": writable(Path(os.environ["TMPDIR"]) / "scratch.txt"),
        "sees_host_processes": os.path.exists(f"/proc/{paths['grader_pid']}"),
        "shadow_readable": os.access("/etc/shadow", os.R_OK),
        "uid": os.getuid(),
    }, sort_keys=True)


# Graded code rewriting its own sources: it only ever reaches the grading's copy.
Path("server.py").write_text("# rewritten by the graded server")
Path("planted.txt").write_text("planted by the graded server")


mcp.run("streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
'''


def test_the_graded_server_sees_only_its_box(grader_box: str, tmp_path: Path) -> None:
    import os

    workspace = write_tree(tmp_path / "ws", {
        "requirements.txt": "mcp>=2.3,<3\n", "server.py": PROBING_SERVER,
        "paths.json": json.dumps({"checkout_file": str(REPO / "pyproject.toml"), "grader_pid": os.getpid()}),
    })
    expected = {"checkout_visible": False, "cwd_writable": True, "sees_host_processes": False,
                "shadow_readable": False, "shared_env_writable": False, "tmp_writable": True, "uid": 65534}
    before = {p.name: p.read_bytes() for p in workspace.iterdir()}
    contract = TaskContract.model_validate({
        "title": "box probe", "runtime": "python", "entryCandidates": ["server.py"],
        "expectedTools": [{"name": "probe"}],
        "calls": [{"tool": "probe", "args": {}, "expect": {"type": "contains", "value": json.dumps(expected,
                                                                                              sort_keys=True)}}],
    })
    grade = grade_workspace_sync(contract, workspace)
    assert grade.contract_pass, grade.first_failure
    start = next(c for c in grade.checks if c.id == "start")
    assert grade.isolation["start"] in (start.detail or "")
    if grader_box == "docker":
        assert grade.isolation["start"].startswith("docker container") and "uid=65534" in grade.isolation["start"]
        assert docker_leftovers("mcp-evals-server-") == []  # the server's container went with the grading
    else:
        assert grade.isolation["start"].startswith(server_box.BOX_DESCRIPTION)
    # The snapshot is the agent's work: the server rewrote only the grading's copy.
    assert {p.name: p.read_bytes() for p in workspace.iterdir()} == before


def test_without_a_box_the_server_does_not_start(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Fail closed: no box, no agent code (infra.sandbox naming the opt-out); the opt-out is explicit."""
    monkeypatch.setenv(server_box.SWITCH_ENV, "0")
    monkeypatch.delenv(UNBOXED_ENV, raising=False)
    with pytest.raises(NoBox, match=UNBOXED_ENV):
        server_box.prefix(readable=[], writable=[tmp_path], cwd=tmp_path)
    monkeypatch.setenv(UNBOXED_ENV, "1")
    args, description = server_box.prefix(readable=[], writable=[tmp_path], cwd=tmp_path)
    assert "bwrap" not in " ".join(args) and description == UNBOXED


def test_docker_form_without_its_image_does_not_start_anything(monkeypatch: pytest.MonkeyPatch,
                                                                 tmp_path: Path) -> None:
    """Fail closed in the docker form too: no engine, CLI or image, no box (infra.sandbox), for the server and for
    the steps alike; runs with or without an engine."""
    from mcp_evals_pipeline.grader.boxes import SWITCH_ENV, StepBox

    monkeypatch.setenv(SWITCH_ENV, "docker")
    monkeypatch.setenv("MCP_EVALS_DOCKER_IMAGE", "mcp-evals-no-such-image:0")
    monkeypatch.delenv(UNBOXED_ENV, raising=False)
    with pytest.raises(NoBox, match=UNBOXED_ENV) as raised:
        server_box.prefix(readable=[], writable=[tmp_path], cwd=tmp_path)
    assert "docker" in str(raised.value)
    with pytest.raises(NoBox, match=r"mcp-evals-no-such-image|[Dd]ocker"):
        StepBox(tmp_path, net="none", ro_paths=[], ro_binds=[])


@needs_box
def test_nested_mounts_keep_their_own_mode(tmp_path: Path) -> None:
    """A read-only node_modules (hardlinked from a shared set) inside the writable run directory stays read-only;
    a writable scratch inside the read-only cache stays writable. Checked in a real box."""
    import subprocess

    from mcp_evals_pipeline.paths import cache_dir

    run_dir = tmp_path / "run"
    (run_dir / "node_modules" / "pkg").mkdir(parents=True)
    cache_dir().joinpath("scratch").mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(dir=cache_dir() / "scratch"))
    args: list[str] = []
    try:
        args, _ = server_box.prefix(readable=[cache_dir(), run_dir / "node_modules"], writable=[run_dir, scratch],
                                    cwd=run_dir)
        script = ("for p in ./state node_modules/pkg/poison {scratch}/tmp {cache}/poison; do "
                  "if touch $p 2>/dev/null; then echo $p=rw; else echo $p=ro; fi; done")
        done = subprocess.run([*args, "sh", "-c", script.format(scratch=scratch, cache=cache_dir())],
                              capture_output=True, text=True, timeout=30, check=False)
    finally:
        server_box.release(args)
        shutil.rmtree(scratch, ignore_errors=True)
    assert done.stdout.split() == ["./state=rw", "node_modules/pkg/poison=ro", f"{scratch}/tmp=rw",
                                   f"{cache_dir()}/poison=ro"], done.stderr
