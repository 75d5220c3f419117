"""The graded server is off the host's loopback (sandbox/server_box.py), and a trial's fake world answers only its
own trial (upstreams/base.py). Real boxes in both forms (the docker form skips only without an engine), a real
grader, real fakes, real sockets."""

from __future__ import annotations

import json
import socket
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from mcp_evals_pipeline.contracts.task import TaskContract
from mcp_evals_pipeline.grader import grade_workspace_sync
from mcp_evals_pipeline.sandbox import server_box
from mcp_evals_pipeline.upstreams import start_service

from .conftest import docker_leftovers, write_tree

# Scans every port of 127.0.0.1 at start and again during a call, and reads /proc/net/tcp: what it finds open must
# be exactly its own PORT and the relay of the fake it was given; a host listener (a bare socket, a second trial's
# fake world) must be neither reachable nor listed.
SCANNING_SERVER = '''
import json, os, socket, urllib.request
from pathlib import Path
from mcp.server.mcpserver import MCPServer

mcp = MCPServer("scanner")
OWN = int(os.environ["PORT"])
UPSTREAM = os.environ["ORDERS_API_URL"]
FAKE = int(UPSTREAM.split("://", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])
HOST = json.loads(Path("host.json").read_text())  # the test's host listeners


def scan():
    found = []
    for port in range(1, 65536):
        s = socket.socket()
        s.settimeout(0.5)
        try:
            # a connection to itself (the ephemeral source port is the one scanned) is not a listener
            if s.connect_ex(("127.0.0.1", port)) == 0 and s.getsockname() != s.getpeername():
                found.append(port)
        finally:
            s.close()
    return found


def listed():
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        ports.update(int(line.split()[1].rsplit(":", 1)[1], 16) for line in lines)
    return ports


AT_START = scan()


@mcp.tool()
def probe() -> str:
    during = scan()
    with urllib.request.urlopen(UPSTREAM + "/orders", timeout=10) as reply:  # the relay works
        fake_ok = reply.status == 200
    seen = listed()
    verdict = {
        "only_relays_at_start": AT_START == sorted({FAKE}),
        "only_relays_during_call": during == sorted({OWN, FAKE}),
        "fake_reached": fake_ok,
        "host_listeners_listed": sorted(p for p in HOST["ports"] if p in seen),
    }
    return json.dumps({"verdict": verdict, "at_start": AT_START, "during": during}, sort_keys=True)


mcp.run("streamable-http", host="127.0.0.1", port=OWN, streamable_http_path="/mcp")
'''

ISOLATED = {"fake_reached": True, "host_listeners_listed": [], "only_relays_at_start": True,
            "only_relays_during_call": True}


def test_a_graded_server_reaches_nothing_but_its_relays(grader_box: str, tmp_path: Path) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    with start_service("ops-platform") as other_world:  # a concurrent trial's world, on the same host
        other_port = int(other_world.origin.rsplit(":", 1)[1])
        host_ports = [listener.getsockname()[1], other_port]
        workspace = write_tree(tmp_path / "ws", {
            "requirements.txt": "mcp>=2.3,<3\n", "server.py": SCANNING_SERVER,
            "host.json": json.dumps({"ports": host_ports}),
        })
        contract = TaskContract.model_validate({
            "title": "loopback scan", "runtime": "python", "entryCandidates": ["server.py"],
            "startTimeoutSeconds": 60, "callTimeoutSeconds": 60,
            "upstream": {"service": "orders", "env": "ORDERS_API_URL"},
            "expectedTools": [{"name": "probe"}],
            "calls": [{"tool": "probe", "args": {},
                       "expect": {"type": "contains", "value": json.dumps(ISOLATED, sort_keys=True)}}],
        })
        try:
            grade = grade_workspace_sync(contract, workspace)
        finally:
            listener.close()
        assert other_world.requests() == []
    assert grade.contract_pass, grade.first_failure and grade.first_failure.detail
    assert "own net ns (relays only)" in grade.isolation["start"]
    if grader_box == "docker":
        assert docker_leftovers("mcp-evals-server-") == []  # the server's container and its relay's


def _send(url: str, method: str = "PUT", body: object = None) -> int:
    data = json.dumps(body if body is not None else {}).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=5) as reply:
            return reply.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_a_second_trials_world_cannot_be_written() -> None:
    """Any process on the host (another trial's server, an agent) that knows a world's port but not its secret:
    refused with 403, and the world's record shows nothing (a write there would make that trial usage.unsafe)."""
    with start_service("ops-platform") as mine, start_service("ops-platform") as theirs:
        write = "/apps/web/env/DEBUG"
        assert _send(theirs.origin + write, body={"value": "1"}) == 403  # no secret
        assert _send(theirs.origin + mine.prefix + write, body={"value": "1"}) == 403  # another trial's secret
        assert _send(theirs.origin + "/apps/web/restart", method="POST") == 403
        assert theirs.requests() == []
        # The trial's own server, with its own URL, is heard and recorded under the paths the checks know.
        status = _send(mine.base_url + write, body={"value": "1"})
        assert [(r.method, r.path, r.status) for r in mine.requests()] == [("PUT", write, status)]


# ---- limits ------------------------------------------------------------------------------------------------------

HOG = r'''
import os, sys, time
what = sys.argv[1]
if what == "file":
    try:
        with open("big", "wb") as f:
            for _ in range(8):
                f.write(b"0" * (1 << 20))
        print("wrote", os.path.getsize("big"))
    except OSError as exc:
        print("refused", os.path.getsize("big"), exc.errno)
elif what == "fork":
    children = 0
    for _ in range(200):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            os.close(1), os.close(2)  # the parent's output ends when it does
            time.sleep(30)
            os._exit(0)
        children += 1
    print("forked", children)
else:
    hog = bytearray(512 << 20)
    for i in range(0, len(hog), 4096):
        hog[i] = 1
    print("allocated", len(hog))
'''


@pytest.fixture
def small_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(server_box.MEM_ENV, "128M")
    monkeypatch.setenv(server_box.PIDS_ENV, "48")
    monkeypatch.setenv(server_box.FSIZE_ENV, "2M")


def _run_boxed(run_dir: Path, what: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(run_dir)}
    args, description = server_box.prefix(readable=[], writable=[run_dir], cwd=run_dir, env=env)
    assert "mem 128M, pids 48, fsize 2M" in description
    proc = subprocess.Popen([*args, "/usr/bin/python3", "-c", HOG, what], cwd=run_dir, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=120)
    finally:
        server_box.stop(proc)  # type: ignore[arg-type]
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.mark.usefixtures("small_limits")
def test_a_graded_server_cannot_write_a_file_past_the_limit(grader_box: str, tmp_path: Path) -> None:
    done = _run_boxed(tmp_path / "run", "file")
    assert (tmp_path / "run" / "big").stat().st_size <= 2 << 20, (done.stdout, done.stderr)
    assert not done.stdout.startswith("wrote")


@pytest.mark.usefixtures("small_limits")
def test_a_graded_server_cannot_fork_past_the_limit(grader_box: str, tmp_path: Path) -> None:
    done = _run_boxed(tmp_path / "run", "fork")
    assert done.stdout.startswith("forked"), done.stderr
    assert int(done.stdout.split()[1]) < 48


@pytest.mark.usefixtures("small_limits")
def test_a_graded_server_cannot_take_memory_past_the_limit(grader_box: str, tmp_path: Path) -> None:
    done = _run_boxed(tmp_path / "run", "memory")
    assert "allocated" not in done.stdout and done.returncode != 0, (done.returncode, done.stdout, done.stderr)


def test_the_relayed_ports_are_exactly_those_the_environment_names() -> None:
    env = {"PORT": "4100", "ORDERS_API_URL": "http://127.0.0.1:4200/s3cret", "OAUTH_ISSUER_URL": "http://localhost:4300",
           "OAUTH_JWKS_URL": "http://[::1]:4400/jwks", "ELSEWHERE": "https://example.com:4500", "HOME": "/tmp/h"}
    assert server_box.reached_ports(env, own=4100) == [4200, 4300, 4400]


def test_a_bad_limit_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(server_box.MEM_ENV, "lots")
    with pytest.raises(ValueError, match=server_box.MEM_ENV):
        server_box.Limits.from_env()
