"""The `docker` backend: one container per trial, for agents we do not trust.

The container runs the sandbox image (`MCP_EVALS_DOCKER_IMAGE`, built from docker/Dockerfile) with:

- the workspace bind-mounted read-write at the same path as on the host, so the file tools (which act on the
  host's workspace) and the agent's shell see the same files, and the grader grades them afterwards;
- a read-only root filesystem, tmpfs /tmp (TMPDIR) and /home/sandbox (HOME), every capability dropped,
  no-new-privileges, a non-root user;
- its own `--internal` bridge network (no route out) unless `MCP_EVALS_DOCKER_NETWORK` says otherwise
  (`none`: loopback only; any other name: that existing network, e.g. one with an LLM proxy on it);
- memory (no swap), pids and cpu limits.

Agent runners (the codex and claude CLIs) get what the hardened backend gives them: the host's pinned CLIs and
Node toolchain (sandbox/base.TOOL_DIRS) read-only at the same path, private directories (`private_dir`) read-write
at the same path, and a host-loopback endpoint (the key proxy, a usage trial's recording MCP proxy, a local model
server) at the same URL inside the container (`allow_endpoint`): the egress module's FORWARDER listens on that port
of the container's own loopback and relays each connection through a unix socket on the io mount to a PortRelay on
the host, which connects to the endpoint and nothing else. The container keeps its `--internal` network: the key
stays in the host's key proxy, and no route leads out.

Each command is a `docker exec` of `timeout` (which kills the command's whole process group at the limit) with
its output redirected to a log file on a second bind mount, so a server the command leaves in the background
never holds the exec's stream open; it keeps running for the agent's next command, as in the local backend.
`close()` removes the container (killing everything in it) and the network, whatever state they are in.

Settings (environment): MCP_EVALS_DOCKER_IMAGE (mcp-evals-sandbox:dev), MCP_EVALS_DOCKER_NETWORK (internal),
MCP_EVALS_DOCKER_MEMORY (4g), MCP_EVALS_DOCKER_PIDS (512), MCP_EVALS_DOCKER_CPUS (2), MCP_EVALS_DOCKER_TMP_SIZE
(1g, each of /tmp and HOME), MCP_EVALS_DOCKER_USER (the host uid:gid, or 65532:65532 when the harness is root; the
workspace is then chowned to it), MCP_EVALS_DOCKER_RO_PATHS / MCP_EVALS_DOCKER_RW_PATHS (`:`-separated host paths
mounted at the same path). Containers and networks carry the label `mcp-evals.sandbox`; `remove_orphans()` sweeps
what a crashed harness left.

The `docker` SDK is imported when a sandbox opens, so this module loads without it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mcp_evals_pipeline import procs
from mcp_evals_pipeline.sandbox.base import CommandResult, Sandbox, SandboxError, chown_tree, tool_dirs
from mcp_evals_pipeline.sandbox.egress import FORWARDER, PROXY_PORT, EgressProxy, PortRelay, proxy_env, socket_parent

OUTPUT_LIMIT = 30_000
LABEL = "mcp-evals.sandbox"
IO_MOUNT = "/run/mcp-evals-io"  # the host scratch dir: command logs
# HOME is its own tmpfs, not under /tmp: codex refuses to set up its helpers in a home under the temp dir.
HOME = "/home/sandbox"
DEFAULT_IMAGE = "mcp-evals-sandbox:dev"
NONROOT = "65532:65532"
# How long past its own limit a command may take before the host gives up on the in-container `timeout`.
HOST_GRACE_S = 15.0
POLL_S = 0.05
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    try:
        return int(value) if value else default
    except ValueError as exc:
        raise SandboxError(f"{name}={value!r} is not an integer") from exc


def _env_float(name: str, default: float) -> float:
    value = os.environ.get(name)
    try:
        return float(value) if value else default
    except ValueError as exc:
        raise SandboxError(f"{name}={value!r} is not a number") from exc


def _paths(name: str) -> list[str]:
    return [str(Path(p).resolve()) for p in os.environ.get(name, "").split(":") if p]


def _default_user() -> str:
    """The host user when that is not root (the workspace is theirs); otherwise a fixed unprivileged uid."""
    uid, gid = os.getuid(), os.getgid()
    return NONROOT if uid == 0 else f"{uid}:{gid}"


@dataclass(frozen=True)
class DockerConfig:
    """Everything the container is made from; `from_env` reads the `MCP_EVALS_DOCKER_*` variables."""

    image: str = DEFAULT_IMAGE
    network: str = "internal"  # internal: a fresh --internal network per trial | none | <existing network name>
    memory: str = "4g"
    pids: int = 512
    cpus: float = 2.0
    tmp_size: str = "1g"
    user: str = field(default_factory=_default_user)
    nofile: int = 4096
    # Extra host paths bind-mounted at the same path, (path, "ro" | "rw"): what a runner keeps outside the
    # workspace and names in its command (a CLI's private dir, a pinned toolchain). Missing paths are skipped.
    mounts: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_env(cls) -> DockerConfig:
        return cls(
            image=os.environ.get("MCP_EVALS_DOCKER_IMAGE") or DEFAULT_IMAGE,
            network=os.environ.get("MCP_EVALS_DOCKER_NETWORK") or "internal",
            memory=os.environ.get("MCP_EVALS_DOCKER_MEMORY") or "4g",
            pids=_env_int("MCP_EVALS_DOCKER_PIDS", 512),
            cpus=_env_float("MCP_EVALS_DOCKER_CPUS", 2.0),
            tmp_size=os.environ.get("MCP_EVALS_DOCKER_TMP_SIZE") or "1g",
            user=os.environ.get("MCP_EVALS_DOCKER_USER") or _default_user(),
            mounts=tuple((p, "ro") for p in _paths("MCP_EVALS_DOCKER_RO_PATHS"))
            + tuple((p, "rw") for p in _paths("MCP_EVALS_DOCKER_RW_PATHS")),
        )

    def describe(self) -> str:
        net = {"internal": "internal bridge, no egress", "none": "none (loopback only)"}.get(
            self.network, f"network {self.network!r}")
        extra = f" + {len(self.mounts)} extra mounts" if self.mounts else ""
        return (f"docker container ({self.image}; read-only root, tmpfs /tmp and HOME, workspace bind mount{extra}; "
                f"{net}; mem {self.memory} no swap, pids {self.pids}, cpus {self.cpus:g}; cap-drop ALL, "
                f"no-new-privileges, user {self.user})")


NOBODY_USER = "65534:65534"  # grading's boxes: the uid the bwrap boxes use (sandbox/hardened.NOBODY)


def grading_config(pids: int) -> DockerConfig:
    """The container of a grading box: the operator's image and limits, no network, uid nobody."""
    return replace(DockerConfig.from_env(), network="none", user=NOBODY_USER, pids=pids, mounts=())


def container_env(workspace: Path, extra: dict[str, str] | None) -> dict[str, str]:
    """The container's whole environment: the sanitized set of the local backend with HOME/TMPDIR on the tmpfs
    and the image's tools first on PATH."""
    env = procs.sanitized_env(home=Path(HOME), tmp=Path("/tmp"), extra=extra)
    env["PATH"] = "/opt/node/bin:/opt/uv/bin:" + env["PATH"]
    env["PWD"] = str(workspace)
    return env


def network_spec(name: str) -> dict[str, Any]:
    """Arguments to `client.networks.create` for a trial's own network: a bridge with no route out."""
    return {"name": name, "driver": "bridge", "internal": True, "labels": {LABEL: "1"}, "check_duplicate": True}


def container_spec(config: DockerConfig, workspace: Path, io_dir: Path, *, name: str, network: str,
                   env: dict[str, str], private_root: Path | None = None, tools: tuple[Path, ...] = (),
                   binds: tuple[tuple[Path, Path, str], ...] = ()) -> dict[str, Any]:
    """Arguments to `client.containers.run` (detached): pure, so the tests check it without an engine.
    `private_root` (runners' private directories) is mounted read-write and `tools` read-only, each at its own
    path; `binds` are (host path, path in the container, "ro" | "rw"): a grading box's runtime, and a shared
    node_modules read-only over the writable workspace copy."""
    nano_cpus = int(config.cpus * 1_000_000_000)
    spec: dict[str, Any] = {
        "image": config.image,
        # Docker's init (tini) is PID 1 and reaps what the agent leaves behind; the image's entrypoint is not used.
        "entrypoint": ["sleep"],
        "command": ["infinity"],
        "init": True,
        "name": name,
        "detach": True,
        "labels": {LABEL: "1", "mcp-evals.workspace": str(workspace)},
        "user": config.user,
        "working_dir": str(workspace),
        "environment": env,
        "volumes": {
            str(workspace): {"bind": str(workspace), "mode": "rw"},
            str(io_dir): {"bind": IO_MOUNT, "mode": "rw"},
        },
        "read_only": True,
        "tmpfs": {
            "/tmp": f"rw,nosuid,nodev,size={config.tmp_size},mode=1777",
            HOME: f"rw,nosuid,nodev,size={config.tmp_size},mode=1777",
        },
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "mem_limit": config.memory,
        "memswap_limit": config.memory,  # equal to the memory limit: no swap
        "pids_limit": config.pids,
        "nano_cpus": nano_cpus,
        "ulimits": [{"Name": "nofile", "Soft": config.nofile, "Hard": config.nofile}],
        "stdin_open": False,
        "tty": False,
    }
    if private_root is not None:
        spec["volumes"][str(private_root)] = {"bind": str(private_root), "mode": "rw"}
    for tool in tools:
        spec["volumes"].setdefault(str(tool), {"bind": str(tool), "mode": "ro"})
    for path, mode in config.mounts:
        if mode not in ("ro", "rw"):
            raise SandboxError(f"mount mode of {path} must be ro or rw, not {mode!r}")
        if Path(path).exists() and path not in spec["volumes"]:
            spec["volumes"][path] = {"bind": path, "mode": mode}
    if binds:
        from docker.types import Mount

        spec["mounts"] = [Mount(target=str(dst), source=str(src), type="bind", read_only=mode != "rw")
                          for src, dst, mode in binds if Path(src).exists()]
    if network == "none":
        spec["network_mode"] = "none"
    else:
        spec["network"] = network
    return spec


def exec_command(command: str, timeout_s: float, log_name: str) -> list[str]:
    """The argv of one `docker exec`: `timeout` kills the command's process group at the limit (and SIGKILLs it
    5 s later); stdin/stdout/stderr never reach the exec's own stream. `timeout` leads its own process group, whose
    id (its pid, the shell's before `exec`) goes to <log>.pgid for the host's last-resort kill."""
    limit = f"{max(timeout_s, 0.1):.3f}"
    wrapper = (f"echo $$ >{IO_MOUNT}/{log_name}.pgid; "
               f"exec timeout -k 5 {limit} /bin/bash -c \"$0\" >{IO_MOUNT}/{log_name} 2>&1 </dev/null")
    return ["/bin/sh", "-c", wrapper, command]


def _ensure_owner(path: Path, user: str, *, back: bool = False) -> None:
    """When the harness is root and the container user is not, hand it the workspace (and what we write into it);
    `back`: hand the tree to `user` whoever that is (its owner again, at close)."""
    if os.getuid() != 0:
        return
    try:
        uid, gid = (int(part) for part in user.split(":", 1)) if ":" in user else (int(user), int(user))
    except ValueError:
        return  # a user name: leave ownership to whoever configured it
    if uid == 0 and not back:
        return
    chown_tree(path, uid, gid)


class DockerSandbox(Sandbox):
    backend = "docker"
    isolation = DockerConfig(user=NONROOT).describe()  # replaced per instance by what was actually configured

    def __init__(self, workspace: Path, extra_env: dict[str, str] | None = None,
                 config: DockerConfig | None = None, client: Any = None, *,
                 binds: tuple[tuple[Path, Path, str], ...] = (), egress: bool = False):
        """`binds`: see container_spec. `egress`: the package registries through the egress proxy's allow-list
        (sandbox/egress.py: HTTP(S)_PROXY at 127.0.0.1:PROXY_PORT in the container, relayed over the io mount to
        the proxy on the host), whatever the container's network; what grading's install box gets."""
        super().__init__(workspace)
        self._binds = binds
        self._egress = egress
        self._proxy: EgressProxy | None = None
        self.config = config or DockerConfig.from_env()
        self.isolation = self.config.describe()
        self._client = client
        self._container: Any = None
        self._network: Any = None
        self._io = Path(tempfile.mkdtemp(prefix="sandbox-docker-io-", dir=socket_parent()))
        # Runners' private directories (private_dir()): mounted read-write at the same path.
        self._private_root = Path(tempfile.mkdtemp(prefix="sandbox-docker-private-"))
        self._private_root.chmod(0o711)
        self._private: list[Path] = []
        self._relays: list[PortRelay] = []
        self._forwarded: dict[int, tuple[str, int]] = {}
        self.workspace.mkdir(parents=True, exist_ok=True)
        st = self.workspace.stat()
        self._owner = (st.st_uid, st.st_gid)  # handed back at close: the grader and the snapshot see its owner
        try:
            self._start(extra_env)
        except BaseException:
            self.close()
            raise

    def _connect(self) -> Any:
        try:
            import docker
        except ImportError as exc:
            raise SandboxError("the docker sandbox needs the `docker` Python SDK (pip install docker)") from exc
        try:
            client = docker.from_env()
            client.ping()
        except Exception as exc:
            raise SandboxError(f"no Docker engine reachable: {type(exc).__name__}: {exc}") from exc
        return client

    def _start(self, extra_env: dict[str, str] | None) -> None:
        if self._client is None:
            self._client = self._connect()
        client = self._client
        self.workspace.mkdir(parents=True, exist_ok=True)
        os.chmod(self._io, 0o777)  # the container user writes its logs here; the dir is private to this trial
        _ensure_owner(self.workspace, self.config.user)
        if self._egress:
            self._proxy = EgressProxy(self._io / "proxy.sock")
            extra_env = {**(extra_env or {}), **proxy_env()}
        name = f"mcp-evals-{uuid.uuid4().hex[:12]}"
        network = self.config.network
        try:
            client.images.get(self.config.image)
        except Exception as exc:
            raise SandboxError(f"sandbox image {self.config.image!r} is not available locally "
                               f"(build it: scripts/docker_trial.sh image): {type(exc).__name__}: {exc}") from exc
        try:
            if network == "internal":
                self._network = client.networks.create(**network_spec(name))
                network = self._network.name
            spec = container_spec(self.config, self.workspace, self._io, name=name, network=network,
                                  env=container_env(self.workspace, extra_env), private_root=self._private_root,
                                  tools=tuple(tool_dirs()), binds=self._binds)
            self._container = client.containers.run(**spec)
        except Exception as exc:
            raise SandboxError(f"could not start the sandbox container: {type(exc).__name__}: {exc}") from exc
        # A first command proves the container usable; failing here is infra, not the agent's.
        result = self.run("test -w . && test -w \"$HOME\" && test -w /tmp", timeout_s=30)
        if result.exit_code != 0:
            raise SandboxError(f"sandbox container is not usable: {result.output.strip() or result.exit_code}")
        if self._proxy is not None:
            self._forward(PROXY_PORT, "proxy.sock")
            self.isolation += f"; egress proxy (allow={','.join(self._proxy.allowed)})"

    # For agent runners -----------------------------------------------------------------------------------------

    def private_dir(self, prefix: str = "agent-") -> Path:
        """A fresh directory outside the workspace at the same path on the host and in the container, handed to the
        container user before every command (what the runner wrote in it, its env file included, is that user's,
        mode as written); removed on close."""
        path = Path(tempfile.mkdtemp(prefix=prefix, dir=self._private_root))
        path.chmod(0o700)
        _ensure_owner(path, self.config.user)
        self._private.append(path)
        return path

    def allow_endpoint(self, url: str) -> str:
        """Make an endpoint on the host's loopback reachable at the same URL inside the container (FORWARDER on
        the container's loopback -> a unix socket on the io mount -> PortRelay -> the host's 127.0.0.1:port).
        Elsewhere: reachable only on a network the operator named (MCP_EVALS_DOCKER_NETWORK), never through the
        per-trial --internal network or none."""
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        port = parts.port or (443 if parts.scheme == "https" else 80)
        if host not in LOOPBACK:
            if self.config.network in ("internal", "none"):
                raise SandboxError(f"{host}:{port} is unreachable from a docker sandbox on network "
                                   f"{self.config.network!r} (no egress); relay it through the host's loopback")
            return url
        target = ("::1" if host == "::1" else "127.0.0.1", port)
        if self._forwarded.get(port) == target:
            return url
        if port in self._forwarded:
            raise SandboxError(f"port {port} of the container's loopback is already in use")
        name = f"relay-{port}.sock"
        self._relays.append(PortRelay(self._io / name, target))
        self._forward(port, name)
        self._forwarded[port] = target
        self.isolation += f"(relay=127.0.0.1:{port})"
        return url

    def _forward(self, port: int, socket_name: str) -> None:
        """Inside the container, as its user, in the background: listen on 127.0.0.1:port, relay to the socket."""
        if self._container is None:
            raise SandboxError("the docker sandbox is closed")
        log = f"forwarder-{port}.log"
        try:
            self._container.exec_run(["/bin/sh", "-c", f'exec python3 -c "$0" "$1" "$2" >{IO_MOUNT}/{log} 2>&1',
                                      FORWARDER, str(port), f"{IO_MOUNT}/{socket_name}"],
                                     user=self.config.user, detach=True)
        except Exception as exc:
            raise SandboxError(f"could not start the relay in the container: {type(exc).__name__}: {exc}") from exc
        deadline = time.monotonic() + 15
        path = self._io / log
        while not (path.is_file() and not path.is_symlink() and b"forwarding" in path.read_bytes()):
            if time.monotonic() > deadline:
                output = procs.tail(path, 2000) if path.is_file() and not path.is_symlink() else ""
                raise SandboxError(f"the relay in the container did not start: {output}")
            time.sleep(0.02)

    def write_file(self, rel: str, content: str) -> int:
        path = self.resolve(rel)
        missing = [p for p in [path, *path.parents] if p.is_relative_to(self.workspace) and not p.exists()]
        written = super().write_file(rel, content)
        # The container user must be able to edit what the file tool wrote (and the parents it made).
        for created in {path, *missing}:
            _ensure_owner(created, self.config.user)
        return written

    def run(self, command: str, timeout_s: float) -> CommandResult:
        if self._container is None:
            raise SandboxError("the docker sandbox is closed")
        api = self._client.api
        for private in self._private:
            with contextlib.suppress(OSError):
                _ensure_owner(private, self.config.user)
        log_name = f"cmd-{time.monotonic_ns()}.log"
        log = self._io / log_name
        started = time.monotonic()
        try:
            exec_id = api.exec_create(self._container.id, exec_command(command, timeout_s, log_name),
                                      stdout=False, stderr=False, stdin=False, tty=False,
                                      workdir=str(self.workspace), user=self.config.user)["Id"]
            api.exec_start(exec_id, detach=True)
        except Exception as exc:
            raise SandboxError(f"docker exec failed: {type(exc).__name__}: {exc}") from exc
        deadline = started + timeout_s + HOST_GRACE_S
        info: dict[str, Any] = {}
        while True:
            try:
                info = api.exec_inspect(exec_id)
            except Exception as exc:
                raise SandboxError(f"docker exec inspect failed: {type(exc).__name__}: {exc}") from exc
            if not info.get("Running") and info.get("ExitCode") is not None:
                break
            if time.monotonic() > deadline:
                # `timeout` itself did not end it (should not happen): kill its process group from outside; the
                # container stays up for the next command.
                self._kill_group(self._io / f"{log_name}.pgid")
                info = {"ExitCode": None}
                break
            time.sleep(POLL_S)
        elapsed = time.monotonic() - started
        exit_code = info.get("ExitCode")
        # timeout exits 124 (TERM worked) or 137 (KILLed 5 s later); a command's own 124 before the limit is its own.
        timed_out = exit_code is None or (exit_code in (124, 137) and elapsed >= timeout_s)
        # The container can write the io dir: read the log only if it is a plain file, never through a symlink
        # the agent planted (the host would follow it to a host path).
        output = procs.tail(log, OUTPUT_LIMIT) if log.is_file() and not log.is_symlink() else ""
        log.unlink(missing_ok=True)
        (self._io / f"{log_name}.pgid").unlink(missing_ok=True)
        return CommandResult(
            exit_code=None if timed_out else exit_code,
            output=output,
            timed_out=timed_out,
            duration_ms=int(elapsed * 1000),
        )

    def _kill_group(self, pgid_file: Path) -> None:
        with contextlib.suppress(Exception):
            pgid = int(pgid_file.read_text().strip())
            self._container.exec_run(["kill", "-KILL", "--", f"-{pgid}"], user=self.config.user, detach=False)

    def close(self) -> None:
        """Remove the container (force: kills everything in it) and its network, ignoring what is already gone."""
        container, self._container = self._container, None
        network, self._network = self._network, None
        if container is not None:
            try:
                container.remove(force=True, v=True)
            except Exception as exc:
                if "404" not in str(exc) and "No such container" not in str(exc):
                    # one more try after a kill; past that, remove_orphans() finds it by its label
                    with contextlib.suppress(Exception):
                        container.kill()
                        container.remove(force=True, v=True)
        if network is not None:
            with contextlib.suppress(Exception):
                network.remove()
        proxy, self._proxy = self._proxy, None
        relays, self._relays = self._relays, []
        for server in [*relays, *([proxy] if proxy is not None else [])]:
            with contextlib.suppress(Exception):
                server.close()
        if os.getuid() == 0:
            with contextlib.suppress(OSError):
                _ensure_owner(self.workspace, f"{self._owner[0]}:{self._owner[1]}", back=True)
        shutil.rmtree(self._io, ignore_errors=True)
        shutil.rmtree(self._private_root, ignore_errors=True)


def remove_orphans(client: Any = None) -> int:
    """Remove every container and network this backend labelled (after a harness crash). Returns how many."""
    if client is None:
        import docker

        client = docker.from_env()
    removed = 0
    for container in client.containers.list(all=True, filters={"label": LABEL}):
        container.remove(force=True, v=True)
        removed += 1
    for network in client.networks.list(filters={"label": LABEL}):
        network.remove()
        removed += 1
    return removed

