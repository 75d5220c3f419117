"""The hardened backend's limits, for real: read-only host, workspace-only writes, pids.max, OOM kill, wall-clock
limit, nothing survives close, no network in net=none. Skipped (saying what is missing) only where the host
cannot provide the backend."""

from __future__ import annotations

import os
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from mcp_evals_pipeline.sandbox import BACKENDS, SandboxError, hardened, open_sandbox, require_isolation
from mcp_evals_pipeline.sandbox.hardened import HardenedSandbox, HostSupport, detect

from .support.processes import naming

_support = detect()
needs_host = pytest.mark.skipif(
    not _support.can_harden, reason="hardened sandbox unavailable here: " + "; ".join(_support.missing))


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "trial" / "workspace"
    ws.mkdir(parents=True)
    (ws / "given.txt").write_text("from the task\n")
    return ws


def _cgroup_dirs(sandbox: HardenedSandbox) -> list[Path]:
    assert sandbox._cgroup is not None
    return list(sandbox._cgroup.dirs.values())


@needs_host
def test_the_backend_is_registered_and_describes_its_isolation(workspace: Path) -> None:
    assert BACKENDS["hardened"] is HardenedSandbox
    with open_sandbox(workspace, backend="hardened") as sandbox:  # an agent's box: net=proxy unless told
        assert sandbox.backend == "hardened"
        for part in ("bwrap", "pidns", "caps-dropped", "cgroup(mem=2G,pids=512)", "net=proxy"):
            assert part in sandbox.isolation
    with HardenedSandbox(workspace) as sandbox:  # the backend's own default
        assert "net=none" in sandbox.isolation
    assert require_isolation("hardened") is not None
    assert require_isolation("local") is None


def test_require_isolation_refuses_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    missing = ("bubblewrap is not installed (Debian: apt-get install -y bubblewrap)",)
    poor = HostSupport(bwrap=None, nsenter_setpriv=True, userns=True, pidns=False, netns=False, cgroup_memory=None,
                       cgroup_pids=None, missing=missing)
    monkeypatch.setattr(hardened, "detect", lambda: poor)
    with pytest.raises(SandboxError, match="bubblewrap is not installed"):
        require_isolation("hardened")
    with pytest.raises(SandboxError, match="unknown isolation level"):
        require_isolation("docker-ish")
    with pytest.raises(SandboxError, match="not available on this host"):
        HardenedSandbox(Path("/tmp"))


@needs_host
def test_only_the_workspace_is_writable_and_the_host_is_hidden(workspace: Path, tmp_path: Path) -> None:
    secret = tmp_path / "trial" / "secret.txt"
    secret.write_text("outside\n")
    with HardenedSandbox(workspace) as sb:
        inside = sb.run("echo made > made.txt && cat given.txt && mkdir -p sub && echo x > sub/y && id -u", 10)
        assert inside.exit_code == 0, inside.output
        assert "from the task" in inside.output and "65534" in inside.output
        for target in ("/usr/evil", "/etc/evil", "/opt/evil", "/var/evil", f"{tmp_path}/evil", "../evil"):
            result = sb.run(f"echo x > {target}", 10)
            assert result.exit_code != 0, (target, result.output)
        hidden = sb.run(f"cat {secret} ../secret.txt; ls /root /home /work; cat /etc/shadow", 10)
        assert "outside" not in hidden.output
        assert hidden.output.count("No such file or directory") >= 3 and "Permission denied" in hidden.output
        procs = sb.run("ls /proc | grep -c '^[0-9]'; cat /proc/1/cmdline | tr '\\0' ' '", 10)
        assert int(procs.output.split()[0]) < 10, procs.output  # its own pid namespace, not the host's
        assert sb.run("touch ~/.npmrc && mkdir -p ~/.cache/uv && test -w $TMPDIR", 10).exit_code == 0
        env = sb.run("env | cut -d= -f1 | sort", 10).output.split()
        assert set(env) <= {"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "SHELL", "PYTHONUNBUFFERED",
                            "PYTHONDONTWRITEBYTECODE", "MCP_USE_ANONYMIZED_TELEMETRY", "PWD", "SHLVL", "_"}, env
        caps = sb.run("grep -E '^Cap(Eff|Bnd|Prm)' /proc/self/status; grep NoNewPrivs /proc/self/status", 10).output
        assert caps.count("0000000000000000") == 3 and "NoNewPrivs:\t1" in caps, caps
        # Files written by the harness's write_file tool are the agent's to change.
        sb.write_file("tool/written.py", "print(1)\n")
        assert sb.run("echo more >> tool/written.py && touch tool/next", 10).exit_code == 0
    assert (workspace / "made.txt").read_text() == "made\n" and (workspace / "sub" / "y").exists()
    assert not (tmp_path / "evil").exists() and not (tmp_path / "trial" / "evil").exists()
    st = workspace.stat()
    assert (st.st_uid, (workspace / "made.txt").stat().st_uid) == (os.getuid(), os.getuid())  # handed back


@needs_host
def test_a_fork_bomb_hits_pids_max(workspace: Path) -> None:
    with HardenedSandbox(workspace, pids=64) as sb:
        cgroups = _cgroup_dirs(sb)
        started = time.monotonic()
        bomb = sb.run("bomb() { bomb | bomb & }; bomb; sleep 3; echo survived", 15)
        assert "process limit reached (pids.max=64)" in bomb.output, bomb.output[-2000:]
        assert int((sb._cgroup.dirs["pids"] / "pids.current").read_text()) <= 64  # type: ignore[union-attr]
        assert time.monotonic() - started < 20
    assert not any(p.exists() for p in cgroups), "cgroups not removed at close"


@needs_host
def test_a_memory_hog_is_oom_killed_and_told(workspace: Path) -> None:
    with HardenedSandbox(workspace, memory="96M") as sb:
        hog = sb.run("python3 -c 'x = bytearray(512 * 1024 * 1024); print(len(x))'", 30)
        assert hog.exit_code in (137, -9), hog.output  # SIGKILL: via bash (137) or as nsenter's own child (-9)
        assert "out of memory (limit 96M)" in hog.output
        after = sb.run("echo still usable", 10)
        assert after.exit_code == 0 and "still usable" in after.output


@needs_host
def test_the_wall_clock_limit_kills_a_command(workspace: Path) -> None:
    with HardenedSandbox(workspace) as sb:
        started = time.monotonic()
        result = sb.run("echo begun; sleep 60", 1.5)
        assert result.timed_out and result.exit_code is None and "begun" in result.output
        assert time.monotonic() - started < 10


@needs_host
def test_background_processes_live_between_commands_and_die_at_close(workspace: Path) -> None:
    marker = "987654"
    with HardenedSandbox(workspace) as sb:
        started = sb.run(f"(setsid sleep {marker} &) ; nohup sleep {marker}1 >/dev/null 2>&1 & "
                         "python3 -m http.server 8765 --bind 127.0.0.1 >/dev/null 2>&1 & sleep 1; echo ok", 10)
        assert started.exit_code == 0, started.output
        # polled, not slept on: on a busy machine the server may take longer than the second above to listen
        reach = sb.run("python3 -c \"import time, urllib.request\nfor _ in range(100):\n    try:\n"
                       "        print(urllib.request.urlopen('http://127.0.0.1:8765/', timeout=5).status); break\n"
                       "    except OSError:\n        time.sleep(0.2)\"", 30)
        assert "200" in reach.output, reach.output  # a server backgrounded by one command serves the next
        assert len(naming(f"sleep {marker}")) >= 2
    assert not naming(f"sleep {marker}"), "a backgrounded process outlived the sandbox"
    assert not naming("http.server 8765")


def _host_listener() -> tuple[socket.socket, int]:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    threading.Thread(target=lambda: [listener.accept()[0].close() for _ in range(8)], daemon=True).start()
    return listener, listener.getsockname()[1]


_CONNECT = ("python3 -c \"import socket, sys\ntry:\n    socket.create_connection(('{host}', {port}), timeout=3)\n"
            "    print('CONNECTED')\nexcept OSError as e:\n    print('REFUSED', e)\"")


@needs_host
def test_net_none_has_only_loopback(workspace: Path) -> None:
    listener, port = _host_listener()
    try:
        with HardenedSandbox(workspace, net="none") as sb:
            links = sb.run("ls /sys/class/net 2>/dev/null || ip -o link | cut -d: -f2", 10).output.split()
            assert links == ["lo"], links
            assert "REFUSED" in sb.run(_CONNECT.format(host="127.0.0.1", port=port), 10).output  # the host's lo
            assert "REFUSED" in sb.run(_CONNECT.format(host="1.1.1.1", port=443), 10).output
            assert "REFUSED" in sb.run(_CONNECT.format(host="deb.debian.org", port=80), 10).output
        with HardenedSandbox(workspace, net="host") as sb:  # the opt-out, recorded as such
            assert "net=host" in sb.isolation
            assert "CONNECTED" in sb.run(_CONNECT.format(host="127.0.0.1", port=port), 10).output
    finally:
        listener.close()


class _Upstream:
    """A tiny HTTP server on the host standing in for a registry: on 127.0.0.2, which is the host's loopback but
    not a name the box's NO_PROXY keeps direct, so the box reaches it only through the egress proxy. It answers
    every GET with the path it got and records the paths."""

    HOST = "127.0.0.2"

    def __init__(self) -> None:
        self.paths: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                outer.paths.append(self.path)
                body = f"upstream-ok {self.path}\n".encode()
                self.send_response(200)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._server = ThreadingHTTPServer((self.HOST, 0), Handler)
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def __enter__(self) -> _Upstream:
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


@needs_host
def test_net_proxy_allows_only_the_listed_hosts(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    status = "curl -sS -m 20 -w '\\nHTTP %{{http_code}}\\n' {flags} {url}"
    with _Upstream() as allowed, _Upstream() as other:
        host, port = allowed.HOST, allowed.port
        monkeypatch.setenv("MCP_EVALS_SANDBOX_EGRESS_ALLOW", f"pypi.org,{host}:{port}")
        with HardenedSandbox(workspace, net="proxy") as sb:
            assert f"net=proxy(allow=pypi.org,{host}:{port})" in sb.isolation
            plain = sb.run(status.format(flags="", url=f"http://{host}:{port}/plain"), 40).output
            assert "HTTP 200" in plain and "upstream-ok" in plain and "/plain" in plain, plain  # absolute-form GET
            tunnel = sb.run(status.format(flags="--proxytunnel", url=f"http://{host}:{port}/tunnel"), 40).output
            assert "HTTP 200" in tunnel and "upstream-ok /tunnel" in tunnel, tunnel  # through CONNECT
            # The same host on a port not listed (a live server all the same), and any host not listed: 403.
            for url in (f"http://{host}:{other.port}/other", "https://example.com/", "http://example.com/"):
                denied = sb.run(status.format(flags="", url=url), 40).output
                assert "403" in denied and "upstream-ok" not in denied and "HTTP 200" not in denied, (url, denied)
            # No route around the proxy: a direct connection, even to the allowed upstream, has no network.
            assert "REFUSED" in sb.run(_CONNECT.format(host=host, port=port), 10).output
            assert "REFUSED" in sb.run(_CONNECT.format(host="151.101.0.223", port=443), 10).output
            assert sb._proxy is not None
            log = sb._proxy.log
    assert f"ALLOW GET {host}:{port}" in log and f"ALLOW CONNECT {host}:{port}" in log, log
    assert f"DENY GET {host}:{other.port}" in log and "DENY CONNECT example.com:443" in log, log
    assert [p.rsplit("/", 1)[-1] for p in allowed.paths] == ["plain", "tunnel"] and other.paths == []


@needs_host
def test_a_deep_tmpdir_still_gets_a_box_with_sockets(workspace: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The egress proxy's unix socket must fit sockaddr_un (108 bytes): under a deep TMPDIR (a CI's, a test's) every
    box with a socket failed to start ("AF_UNIX path too long", so every trial was infra.sandbox)."""
    import tempfile

    deep = tmp_path / ("d" * 60) / ("e" * 20)
    deep.mkdir(parents=True)
    monkeypatch.setenv("TMPDIR", str(deep))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    assert len(tempfile.gettempdir()) > 80
    with HardenedSandbox(workspace, net="proxy") as sb:
        done = sb.run("echo boxed", timeout_s=30)
        assert done.exit_code == 0 and "boxed" in done.output


@needs_host
def test_a_batch_s_code_server_is_out_of_an_agent_s_reach(workspace: Path) -> None:
    """A batch's code location is a gRPC code server (launched_runs.py) that launches runs for anyone who reaches
    it. It listens on a unix socket under the host's /tmp: an agent in the default box sees its own /tmp and no
    network, so it can neither find nor connect to it (while the harness can)."""
    from mcp_evals_pipeline.launched_runs import InstanceRuns

    from .support.instances import batch_instance

    with batch_instance() as instance, InstanceRuns(instance) as runs:
        path = runs.location.client.socket
        assert path and Path(path).exists() and runs.location.client.ping("harness")["echo"] == "harness"
        probe = ("import socket,sys; s=socket.socket(socket.AF_UNIX); "
                 f"r=s.connect_ex({path!r}); print('connect', r); sys.exit(0 if r else 1)")
        with open_sandbox(workspace, backend="hardened") as sb:
            seen = sb.run(f"ls -a {Path(path).parent}; python3 -c \"{probe}\"", 20)
        assert Path(path).name not in seen.output.split("connect")[0], seen.output
        assert seen.exit_code == 0 and "connect 0" not in seen.output, seen.output


@needs_host
def test_an_interrupt_while_the_box_starts_stays_an_interrupt(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run terminated (SIGINT, SIGTERM) while its box prepares must end as an interruption: turned into a
    SandboxError it became the trial's retryable infra.sandbox, the step slept out its retry backoff and the run
    was killed, not cancelled. The box it had started dies either way; a real error still names the sandbox."""
    started: list[HardenedSandbox] = []

    def interrupted(self: HardenedSandbox, command: str, timeout_s: float) -> object:
        started.append(self)  # the box is up: this is its first command (HOME on its tmpfs)
        raise KeyboardInterrupt

    monkeypatch.setattr(HardenedSandbox, "run", interrupted)
    with pytest.raises(KeyboardInterrupt):
        HardenedSandbox(workspace)
    box = started[0]._box
    assert box is not None and box.poll() is not None, "the box outlived the interrupted start"

    def broken(self: HardenedSandbox, command: str, timeout_s: float) -> object:
        raise OSError("no room for the command's log")

    monkeypatch.setattr(HardenedSandbox, "run", broken)
    with pytest.raises(SandboxError, match="could not start the hardened sandbox: OSError"):
        HardenedSandbox(workspace)
