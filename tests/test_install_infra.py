"""An install failure is infra only on the harness's own evidence, never on what the workspace's code prints.

Tried as an attacker would, through the real grader and real boxes: a build backend (uv builds `./evilpkg`) and an
npm lifecycle script that print a network error and exit 1, or that keep the step running until it times out
(the backend by leaving a child that holds uv's output pipe, the script by running on). Each was `infra.install`
(the trial left every denominator and was retried); each must be `contract.install`, a scored failure. And a
registry that really is unreachable (the egress proxy records the failed connection) is still `infra.install`.
The registry the harness probes is a real local server that answers, so these tests need no network.
"""

from __future__ import annotations

import json
import socket
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from mcp_evals_pipeline.contracts.grade import TrialGrade
from mcp_evals_pipeline.contracts.task import TaskContract
from mcp_evals_pipeline.grader import grade_workspace_sync
from mcp_evals_pipeline.grader.install_failure import TIMEOUT_ENV
from mcp_evals_pipeline.node_toolchain import ensure_toolchain
from mcp_evals_pipeline.sandbox.egress import EgressProxy

from .conftest import TASKS, write_tree

PY_TASK = TASKS / "py-v4-01-basic-tool-server"
TS_TASK = TASKS / "v5-01-basic-tool-server"
FORGED = "error: Connection refused (os error 111)"
FORGED_NPM = ("npm error code ECONNREFUSED\nnpm error network request to https://registry.npmjs.org/x failed, "
              "reason: connect ECONNREFUSED 104.16.0.1:443\nerror: Connection refused (os error 111)")

# A build backend uv imports to build ./evilpkg: prints a forged network error and fails.
LYING_BACKEND = f"import sys\nprint({FORGED!r}, file=sys.stderr, flush=True)\nsys.exit(1)\n"
# A build backend that forks a child holding uv's output pipe, and returns: uv waits for the pipe until the timeout.
HANGING_BACKEND = ("import os, sys, time\nif os.fork() == 0:\n    time.sleep(600)\n    os._exit(0)\n"
                   "print('building...', flush=True)\n")


@pytest.fixture
def registry_up(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A registry that answers the harness's probe (python and npm alike)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    monkeypatch.setenv("UV_INDEX_URL", url + "simple/")
    monkeypatch.setenv("NPM_CONFIG_REGISTRY", url)
    monkeypatch.setenv(TIMEOUT_ENV, "8")
    try:
        yield url
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def node_toolchain() -> None:
    """The pinned toolchain, installed from the real registry before `registry_up` points npm elsewhere."""
    ensure_toolchain()


def _contract(task: Path) -> TaskContract:
    return TaskContract.model_validate_json((task / "task.json").read_text())


def _python_workspace(root: Path, backend: str) -> Path:
    return write_tree(root, {
        "requirements.txt": "./evilpkg\n",  # a local package: uv runs its build backend
        "server.py": (PY_TASK / "golden" / "server.py").read_text(),
        "evilpkg/pyproject.toml": '[build-system]\nrequires = []\nbuild-backend = "evil_backend"\n'
                                  'backend-path = ["."]\n\n[project]\nname = "evilpkg"\nversion = "1.0"\n',
        "evilpkg/evil_backend.py": backend,
    })


def _node_workspace(root: Path, script: str) -> Path:
    """Installed as is (a local reference), so its own preinstall script runs; no registry package is needed."""
    manifest = {"name": "evil", "version": "1.0.0", "private": True, "type": "module",
                "dependencies": {"helper": "file:./helper"}, "scripts": {"preinstall": script}}
    return write_tree(root, {
        "package.json": json.dumps(manifest),
        "helper/package.json": '{"name": "helper", "version": "1.0.0"}\n',
        "src/server.ts": (TS_TASK / "golden" / "src" / "server.ts").read_text(),
    })


def _assert_scored_install_failure(grade: TrialGrade) -> str:
    assert grade.failure_code == "contract.install", (grade.failure_code, grade.error, grade.first_failure)
    assert grade.valid and grade.scored_for_pass_rate and not grade.contract_pass  # in every denominator
    return grade.first_failure.detail or "" if grade.first_failure else ""


def test_a_build_backend_that_prints_a_network_error_is_a_contract_failure(
        grader_box: str, tmp_path: Path, registry_up: str) -> None:
    grade = grade_workspace_sync(_contract(PY_TASK), _python_workspace(tmp_path / "ws", LYING_BACKEND))
    detail = _assert_scored_install_failure(grade)
    assert FORGED in detail and "answers the harness's own probe" in detail, detail


def test_a_build_backend_holding_the_pipe_past_the_timeout_is_a_contract_failure(
        grader_box: str, tmp_path: Path, registry_up: str) -> None:
    grade = grade_workspace_sync(_contract(PY_TASK), _python_workspace(tmp_path / "ws", HANGING_BACKEND))
    detail = _assert_scored_install_failure(grade)
    assert "timed out after 8s" in detail and "the workspace's own code" in detail, detail


def test_an_unreachable_registry_is_still_infra(grader_box: str, monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    """The index is allowed but never resolves: the egress proxy itself fails to connect, and says so."""
    monkeypatch.setenv("UV_INDEX_URL", "https://registry.invalid/simple/")
    monkeypatch.setenv("MCP_EVALS_SANDBOX_EGRESS_ALLOW", "registry.invalid")
    # A declaration of its own (the comment is part of the key): no shared environment can be reused for it.
    workspace = write_tree(tmp_path / "ws", {"requirements.txt": f"mcp>=2.3,<3\n# {uuid.uuid4().hex}\n",
                                             "server.py": (PY_TASK / "golden" / "server.py").read_text()})
    grade = grade_workspace_sync(_contract(PY_TASK), workspace)
    assert grade.failure_code == "infra.install", (grade.failure_code, grade.first_failure)
    assert not grade.valid
    assert "the egress proxy could not reach registry.invalid:443" in (grade.error or ""), grade.error


def test_an_npm_script_that_prints_a_network_error_is_a_contract_failure(
        grader_box: str, tmp_path: Path, node_toolchain: None, registry_up: str) -> None:
    script = f"printf '%s\\n' {json.dumps(FORGED_NPM)} >&2; exit 1"
    grade = grade_workspace_sync(_contract(TS_TASK), _node_workspace(tmp_path / "ws", script))
    detail = _assert_scored_install_failure(grade)
    assert "ECONNREFUSED" in detail and "answers the harness's own probe" in detail, detail


def test_an_npm_script_running_past_the_timeout_is_a_contract_failure(
        grader_box: str, tmp_path: Path, node_toolchain: None, registry_up: str) -> None:
    grade = grade_workspace_sync(_contract(TS_TASK), _node_workspace(tmp_path / "ws", "sleep 600"))
    detail = _assert_scored_install_failure(grade)
    assert "timed out after 8s" in detail and "the workspace's own code" in detail, detail


def test_only_a_failure_to_reach_a_named_host_is_evidence(tmp_path: Path) -> None:
    """Under a `.suffix` entry the box can pick a name that never resolves: logged, never evidence."""
    proxy = EgressProxy(tmp_path / "proxy.sock", allowed=(".invalid", "registry.invalid"))
    try:
        for host in ("anything-the-agent-likes.invalid", "registry.invalid"):
            with socket.socket(socket.AF_UNIX) as client:
                client.settimeout(30)
                client.connect(str(tmp_path / "proxy.sock"))
                client.sendall(f"CONNECT {host}:443 HTTP/1.1\r\nHost: {host}:443\r\n\r\n".encode())
                assert client.recv(4096).startswith(b"HTTP/1.1 502")
    finally:
        proxy.close()
    assert [line.split(":")[0] for line in proxy.unreachable] == ["registry.invalid"]
    assert sum(line.startswith("FAIL CONNECT") for line in proxy.log) == 2
