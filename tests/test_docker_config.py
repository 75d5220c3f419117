"""The Docker deployment pieces: deploy/dagster.yaml against Dagster's own instance schema, docker/Dockerfile's
pins, and the `docker` sandbox backend: its container spec and lifecycle without an engine (a fake client), then
for real when an engine and the sandbox image are present (skipped, with the reason, otherwise)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from mcp_evals_pipeline.sandbox import BACKENDS, SandboxError
from mcp_evals_pipeline.sandbox.docker_backend import (
    IO_MOUNT,
    LABEL,
    NONROOT,
    DockerConfig,
    DockerSandbox,
    container_env,
    container_spec,
    exec_command,
    network_spec,
)

REPO = Path(__file__).resolve().parent.parent
DAGSTER_YAML = REPO / "deploy" / "dagster.yaml"
DOCKERFILE = REPO / "docker" / "Dockerfile"
TRIAL_SCRIPT = REPO / "scripts" / "docker_trial.sh"


# --- deploy/dagster.yaml -------------------------------------------------------------------------------------


def _instance_config(tmp_path: Path, raw: dict[str, Any] | None = None) -> dict[str, Any]:
    """Dagster's own loader: the file at $DAGSTER_HOME/dagster.yaml through the instance schema."""
    from dagster._core.instance.config import dagster_instance_config

    if raw is None:
        shutil.copy(DAGSTER_YAML, tmp_path / "dagster.yaml")
    else:
        (tmp_path / "dagster.yaml").write_text(yaml.safe_dump(raw))
    config, custom_class = dagster_instance_config(str(tmp_path))
    assert custom_class is None
    return dict(config)


def test_dagster_yaml_passes_dagsters_instance_schema(tmp_path: Path) -> None:
    config = _instance_config(tmp_path)
    assert config["run_launcher"]["module"] == "dagster_docker"
    assert config["run_launcher"]["class"] == "DockerRunLauncher"
    assert config["concurrency"]["pools"]["default_limit"] >= 1
    assert config["run_monitoring"]["enabled"] is True
    assert config["run_monitoring"]["start_timeout_seconds"] > 0
    assert "postgres" in config["storage"]


def test_dagster_yaml_launcher_and_coordinator_configs_validate(tmp_path: Path) -> None:
    """The nested class configs are only checked when the instance builds them: check them the same way."""
    from dagster._config import process_config
    from dagster._serdes.config_class import ConfigurableClassData, class_from_code_pointer
    from dagster_docker import DockerRunLauncher

    config = _instance_config(tmp_path)
    launcher_cfg = config["run_launcher"]
    launcher_cls = class_from_code_pointer(launcher_cfg["module"], launcher_cfg["class"])
    assert launcher_cls is DockerRunLauncher
    processed = process_config(launcher_cls.config_type(), launcher_cfg["config"])
    assert processed.success, processed.errors
    # Building the launcher needs no engine; it runs dagster-docker's own checks of network/container_kwargs.
    launcher = launcher_cls.from_config_value(
        ConfigurableClassData(launcher_cfg["module"], launcher_cfg["class"], yaml.safe_dump(launcher_cfg["config"])),
        processed.value,
    )
    assert launcher.networks == ["mcp-evals-dagster"]
    assert "MCP_EVALS_SANDBOX=docker" in launcher.env_vars
    assert "/var/run/docker.sock:/var/run/docker.sock" in launcher.container_kwargs["volumes"]
    # The sandbox bind-mounts workspaces by host path: the results dir must be mounted at the same path.
    results = next(v.split("=", 1)[1] for v in launcher.env_vars if v.startswith("MCP_EVALS_RESULTS_DIR="))
    assert f"{results}:{results}" in launcher.container_kwargs["volumes"]

    coord_cfg = config["run_coordinator"]
    coord_cls = class_from_code_pointer(coord_cfg["module"], coord_cfg["class"])
    assert process_config(coord_cls.config_type(), coord_cfg.get("config") or {}).success


def test_dagster_schema_rejects_a_broken_copy(tmp_path: Path) -> None:
    """The validation above is real: the same loader rejects a wrong type and an unknown key."""
    from dagster._core.errors import DagsterInvalidConfigError

    raw = yaml.safe_load(DAGSTER_YAML.read_text())
    raw["run_monitoring"]["enabled"] = "sometimes"
    with pytest.raises(DagsterInvalidConfigError):
        _instance_config(tmp_path, raw)
    raw = yaml.safe_load(DAGSTER_YAML.read_text())
    raw["concurrency"]["pools"]["sandbox_limit"] = 4
    with pytest.raises(DagsterInvalidConfigError):
        _instance_config(tmp_path, raw)


def test_the_pool_the_yaml_limits_is_the_trials_pool() -> None:
    source = (REPO / "mcp_evals_pipeline" / "defs" / "trials" / "assets.py").read_text()
    assert 'pool="sandbox"' in source


def test_the_yaml_lets_one_duckdb_writing_run_start_at_a_time() -> None:
    from mcp_evals_pipeline.definitions import defs
    from mcp_evals_pipeline.store import WRITER_TAG

    raw = yaml.safe_load(DAGSTER_YAML.read_text())
    assert {"key": WRITER_TAG, "limit": 1} in raw["concurrency"]["runs"]["tag_concurrency_limits"]
    writers = {name for name in ("reports_job", "synthesis_job", "trials_job", "trial_checks_job", "catalog_job")
               if defs.resolve_job_def(name).tags.get(WRITER_TAG)}
    assert writers == {"reports_job", "synthesis_job"}
    # The run workers leave their rows to it.
    assert "MCP_EVALS_ROW_WRITER=indexer" in raw["run_launcher"]["config"]["env_vars"]


# --- docker/Dockerfile and the script -----------------------------------------------------------------------


def _args(dockerfile: str) -> dict[str, str]:
    return dict(re.findall(r"^ARG (\w+)=(\S+)$", dockerfile, flags=re.MULTILINE))


def test_dockerfile_pins_every_tool() -> None:
    text = DOCKERFILE.read_text()
    args = _args(text)
    semver = re.compile(r"^\d+\.\d+\.\d+$")
    for name in ("NODE_VERSION", "NPM_VERSION", "UV_VERSION"):
        assert semver.match(args.get(name, "")), f"{name} is not pinned to an exact version: {args.get(name)!r}"
    assert args["NODE_VERSION"].startswith("22.")
    assert '"uv==${UV_VERSION}"' in text
    assert "sys.version_info[:2] == (3, 11)" in text  # bookworm's python3 is 3.11; the build fails otherwise
    assert re.match(r"^[A-Za-z0-9+/]{86}==$", args["NODE_SHA512"]), "the Node download is checked by its sha512"
    assert ":latest" not in text
    assert re.search(r"^FROM \$\{BASE_IMAGE\}$", text, flags=re.MULTILINE)


def test_the_image_pins_no_agent_cli_of_its_own() -> None:
    """The CLIs' versions live in one place (agents/cli_tools.CLI_PINS); the container runs those, mounted from
    the host's cache, so the image names none."""
    from mcp_evals_pipeline.agents.cli_tools import CLI_PINS

    text = DOCKERFILE.read_text()
    for package, _version in CLI_PINS.values():
        assert package not in text.replace(f"# {package}", "")


def test_dockerfile_uv_matches_the_projects_uv_range() -> None:
    uv = _args(DOCKERFILE.read_text())["UV_VERSION"]
    assert _args((REPO / "docker" / "pipeline.Dockerfile").read_text())["UV_VERSION"] == uv  # the run worker's too
    pyproject = (REPO / "pyproject.toml").read_text()
    low, high = re.search(r'"uv>=([\d.]+),<([\d.]+)"', pyproject).groups()  # type: ignore[union-attr]
    as_tuple = lambda v: tuple(int(p) for p in v.split("."))  # noqa: E731
    assert as_tuple(low) <= as_tuple(uv) < as_tuple(high)


def test_trial_script_is_executable_and_runs_the_replay_trial() -> None:
    assert os.access(TRIAL_SCRIPT, os.X_OK)
    text = TRIAL_SCRIPT.read_text()
    assert "MCP_EVALS_SANDBOX=docker" in text
    assert "--agent replay" in text and "--trials 1" in text and "--no-verify" in text
    assert "debootstrap" in text and "docker import" in text
    subprocess.run(["bash", "-n", str(TRIAL_SCRIPT)], check=True)


# --- the container spec (no engine) -------------------------------------------------------------------------


def test_docker_is_a_registered_backend() -> None:
    assert BACKENDS["docker"] is DockerSandbox


def test_container_spec_limits_and_isolation(tmp_path: Path) -> None:
    config = DockerConfig(image="img:1", memory="2g", pids=256, cpus=1.5, tmp_size="512m", user="1234:1234")
    ws = tmp_path / "ws"
    spec = container_spec(config, ws, tmp_path / "io", name="mcp-evals-x", network="mcp-evals-x",
                          env={"A": "1"})
    assert spec["image"] == "img:1"
    assert spec["read_only"] is True
    assert spec["tmpfs"] == {"/tmp": "rw,nosuid,nodev,size=512m,mode=1777",
                             "/home/sandbox": "rw,nosuid,nodev,size=512m,mode=1777"}
    assert spec["cap_drop"] == ["ALL"]
    assert spec["security_opt"] == ["no-new-privileges"]
    assert spec["mem_limit"] == spec["memswap_limit"] == "2g"
    assert spec["pids_limit"] == 256
    assert spec["nano_cpus"] == 1_500_000_000
    assert spec["user"] == "1234:1234"
    assert spec["init"] is True
    assert spec["detach"] is True
    assert spec["network"] == "mcp-evals-x" and "network_mode" not in spec
    assert spec["volumes"] == {
        str(ws): {"bind": str(ws), "mode": "rw"},  # same path inside and out
        str(tmp_path / "io"): {"bind": IO_MOUNT, "mode": "rw"},
    }
    assert spec["working_dir"] == str(ws)
    assert spec["labels"][LABEL] == "1"
    assert spec["environment"] == {"A": "1"}
    assert "privileged" not in spec and "devices" not in spec and "cap_add" not in spec


def test_extra_mounts_at_the_same_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ro, rw = tmp_path / "clis", tmp_path / "agent-runs"
    ro.mkdir()
    rw.mkdir()
    monkeypatch.setenv("MCP_EVALS_DOCKER_RO_PATHS", f"{ro}:{tmp_path / 'missing'}")
    monkeypatch.setenv("MCP_EVALS_DOCKER_RW_PATHS", str(rw))
    config = DockerConfig.from_env()
    spec = container_spec(config, tmp_path / "ws", tmp_path / "io", name="n", network="n", env={})
    assert spec["volumes"][str(ro)] == {"bind": str(ro), "mode": "ro"}
    assert spec["volumes"][str(rw)] == {"bind": str(rw), "mode": "rw"}
    assert str(tmp_path / "missing") not in spec["volumes"]
    assert "3 extra mounts" in config.describe()


def test_network_none_and_the_internal_network() -> None:
    spec = container_spec(DockerConfig(network="none"), Path("/w"), Path("/io"), name="n", network="none", env={})
    assert spec["network_mode"] == "none" and "network" not in spec
    net = network_spec("mcp-evals-abc")
    assert net["internal"] is True and net["driver"] == "bridge" and net["labels"] == {LABEL: "1"}


def test_container_env_is_sanitized_with_home_on_tmpfs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SECRET_TOKEN", "do-not-leak")
    env = container_env(Path("/w"), {"MCP_EXTRA": "1"})
    assert env["HOME"] == "/home/sandbox" and env["TMPDIR"] == "/tmp"
    assert env["PATH"].startswith("/opt/node/bin:/opt/uv/bin:")
    assert env["MCP_EXTRA"] == "1"
    assert "SECRET_TOKEN" not in env


def test_config_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_EVALS_DOCKER_IMAGE", "custom:2")
    monkeypatch.setenv("MCP_EVALS_DOCKER_NETWORK", "none")
    monkeypatch.setenv("MCP_EVALS_DOCKER_MEMORY", "1g")
    monkeypatch.setenv("MCP_EVALS_DOCKER_PIDS", "64")
    monkeypatch.setenv("MCP_EVALS_DOCKER_CPUS", "0.5")
    config = DockerConfig.from_env()
    assert (config.image, config.network, config.memory, config.pids, config.cpus) == ("custom:2", "none", "1g", 64,
                                                                                      0.5)
    assert "loopback only" in config.describe()
    monkeypatch.setenv("MCP_EVALS_DOCKER_PIDS", "lots")
    with pytest.raises(SandboxError, match="MCP_EVALS_DOCKER_PIDS"):
        DockerConfig.from_env()


def test_default_user_is_never_root() -> None:
    user = DockerConfig().user
    assert user == (NONROOT if os.getuid() == 0 else f"{os.getuid()}:{os.getgid()}")
    assert not user.startswith("0:")


def test_exec_command_times_out_the_process_group_and_detaches_output() -> None:
    argv = exec_command("echo 'hi there'; sleep 1 &", 12.5, "cmd-1.log")
    assert argv[:2] == ["/bin/sh", "-c"]
    assert "timeout -k 5 12.500 /bin/bash -c" in argv[2]
    assert f">{IO_MOUNT}/cmd-1.log 2>&1 </dev/null" in argv[2]
    assert argv[3] == "echo 'hi there'; sleep 1 &"  # passed as $0, never interpolated into the wrapper


# --- lifecycle with a fake client (no engine) ---------------------------------------------------------------


class _Obj:
    def __init__(self, name: str, log: list[tuple[str, Any]]):
        self.name = self.id = name
        self._log = log

    def remove(self, **kwargs: Any) -> None:
        self._log.append(("remove", self.name))

    def kill(self) -> None:
        self._log.append(("kill", self.name))


class _FakeAPI:
    def __init__(self, log: list[tuple[str, Any]]):
        self._log = log

    def exec_create(self, container: str, cmd: list[str], **kwargs: Any) -> dict[str, str]:
        self._log.append(("exec", cmd[3], kwargs["user"], kwargs["workdir"]))
        return {"Id": "e1"}

    def exec_start(self, exec_id: str, detach: bool) -> None:
        assert detach

    def exec_inspect(self, exec_id: str) -> dict[str, Any]:
        return {"Running": False, "ExitCode": 0}


class FakeClient:
    def __init__(self, fail_run: bool = False):
        self.log: list[tuple[str, Any]] = []
        self.api = _FakeAPI(self.log)
        self.fail_run = fail_run
        outer = self

        class Images:
            def get(self, name: str) -> None:
                outer.log.append(("image", name))

        class Networks:
            def create(self, **kwargs: Any) -> _Obj:
                outer.log.append(("network", kwargs))
                return _Obj(kwargs["name"], outer.log)

        class Containers:
            def run(self, **kwargs: Any) -> _Obj:
                outer.log.append(("run", kwargs))
                if outer.fail_run:
                    raise RuntimeError("engine said no")
                return _Obj(kwargs["name"], outer.log)

        self.images, self.networks, self.containers = Images(), Networks(), Containers()


def test_lifecycle_with_a_fake_engine(tmp_path: Path) -> None:
    client = FakeClient()
    config = DockerConfig(image="img:1", user="1234:1234")
    sandbox = DockerSandbox(tmp_path / "ws", extra_env={"K": "v"}, config=config, client=client)
    kinds = [entry[0] for entry in client.log]
    assert kinds[:3] == ["image", "network", "run"]
    net_kwargs, run_kwargs = client.log[1][1], client.log[2][1]
    assert net_kwargs["internal"] is True
    assert run_kwargs["network"] == net_kwargs["name"] and run_kwargs["environment"]["K"] == "v"
    assert client.log[3] == ("exec", 'test -w . && test -w "$HOME" && test -w /tmp', "1234:1234", str(tmp_path / "ws"))
    assert sandbox.isolation == config.describe() and "internal bridge, no egress" in sandbox.isolation
    result = sandbox.run("true", timeout_s=5)
    assert result.exit_code == 0 and not result.timed_out
    sandbox.close()
    assert ("remove", run_kwargs["name"]) in client.log and ("remove", net_kwargs["name"]) in client.log
    with pytest.raises(SandboxError, match="closed"):
        sandbox.run("true", timeout_s=5)
    sandbox.close()  # idempotent


def test_a_failed_start_removes_the_network(tmp_path: Path) -> None:
    client = FakeClient(fail_run=True)
    with pytest.raises(SandboxError, match="could not start the sandbox container"):
        DockerSandbox(tmp_path / "ws", config=DockerConfig(image="img:1", user="1234:1234"), client=client)
    network_name = client.log[1][1]["name"]
    assert client.log[-1] == ("remove", network_name)


def test_without_the_sdk_the_module_loads_and_opening_says_why(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    probe = ("import sys; import mcp_evals_pipeline.sandbox.docker_backend; "
             "sys.exit('docker' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", probe], cwd=REPO).returncode == 0, "the SDK was imported eagerly"
    monkeypatch.setitem(sys.modules, "docker", None)  # `import docker` now raises ImportError
    with pytest.raises(SandboxError, match="docker` Python SDK"):
        DockerSandbox(tmp_path / "ws", config=DockerConfig(image="img:1"))


# --- against a real engine (skipped without one) ------------------------------------------------------------

ENGINE_IMAGE = os.environ.get("MCP_EVALS_DOCKER_IMAGE") or "mcp-evals-sandbox:dev"


def _engine_skip_reason(image: str = ENGINE_IMAGE, what: str = "sandbox image") -> str | None:
    """Why the tests that need a real engine and `image` cannot run here (None: they can)."""
    try:
        import docker
    except ImportError:
        return "the docker Python SDK is not installed"
    try:
        client = docker.from_env(timeout=5)
        client.ping()
    except Exception as exc:
        return f"no Docker engine reachable ({type(exc).__name__}); start dockerd or set DOCKER_HOST"
    try:
        client.images.get(image)
    except Exception:
        return f"{what} {image!r} not built (scripts/docker_engine.sh images)"
    return None


@pytest.fixture(scope="module")
def engine() -> Any:
    reason = _engine_skip_reason()
    if reason:
        pytest.skip(reason)
    import docker

    return docker.from_env()


@pytest.fixture
def live(engine: Any, tmp_path: Path) -> Any:
    sandbox = DockerSandbox(tmp_path / "ws", config=DockerConfig(image=ENGINE_IMAGE, memory="512m", pids=128,
                                                                 cpus=1.0), client=engine)
    yield sandbox
    sandbox.close()


def test_engine_container_is_locked_down(live: DockerSandbox) -> None:
    container = live._container
    container.reload()
    host = container.attrs["HostConfig"]
    assert host["ReadonlyRootfs"] is True
    assert host["Memory"] == 512 * 1024**2 and host["MemorySwap"] == 512 * 1024**2
    assert host["PidsLimit"] == 128 and host["NanoCpus"] == 1_000_000_000
    assert host["CapDrop"] == ["ALL"] and "no-new-privileges" in host["SecurityOpt"]
    result = live.run("id -u; touch /usr/x 2>&1; touch /tmp/ok && echo tmp-ok; echo data > made.txt", 30)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] != "0"
    assert "Read-only file system" in lines[1]
    assert "tmp-ok" in result.output
    assert (live.workspace / "made.txt").read_text() == "data\n"  # the same files inside and out
    live.write_file("sub/from_host.txt", "x")
    assert live.run("echo y >> sub/from_host.txt && cat sub/from_host.txt", 30).output == "xy\n"


def test_engine_memory_limit_kills_a_hog(engine: Any, tmp_path: Path) -> None:
    config = DockerConfig(image=ENGINE_IMAGE, memory="256m")
    with DockerSandbox(tmp_path / "ws", config=config, client=engine) as sandbox:
        hog = sandbox.run("python3 -c 'x = bytearray(600 * 1024 * 1024); print(len(x))'", 60)
        assert hog.exit_code == 137, hog  # the OOM killer, not a Python MemoryError
        assert sandbox.run("echo alive", 10).output == "alive\n"


def test_engine_agent_tools_run_under_the_lockdown(live: DockerSandbox) -> None:
    """The image's tools, and the runners' pinned CLIs from the host's cache (mounted read-only at the same path)."""
    from mcp_evals_pipeline.agents.cli_tools import cli_path, ensure_pinned_cli

    clis = ":".join(cli_path(ensure_pinned_cli(agent)) for agent in ("codex", "claude"))
    result = live.run(f"(export PATH={clis}:$PATH && codex --version && claude --version) && node --version && "
                      "npm --version && uv --version && python3 --version && uv venv -q .venv && "
                      ".venv/bin/python -c 'print(42)'", 120)
    assert result.exit_code == 0, result.output
    assert "Refusing" not in result.output  # codex's helpers: HOME is not under the temp dir
    assert result.output.rstrip().endswith("42")


def test_engine_a_planted_log_symlink_is_not_followed_on_the_host(live: DockerSandbox, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    secret = tmp_path / "host-secret.txt"
    secret.write_text("host only\n")
    fixed = time.monotonic_ns() + 10**12
    # The agent plants a symlink at the next command's log name (predicted here), pointing at a host path.
    (live._io / f"cmd-{fixed}.log").symlink_to(secret)
    monkeypatch.setattr(time, "monotonic_ns", lambda: fixed)
    result = live.run("echo from-container", 10)
    assert "host only" not in result.output


def test_engine_no_egress(live: DockerSandbox) -> None:
    probe = ("python3 -c \"import socket; s = socket.socket(); s.settimeout(3); "
             "print('EGRESS' if s.connect_ex(('1.1.1.1', 443)) == 0 else 'blocked')\"")
    result = live.run(probe, 30)
    assert result.output.strip() == "blocked", result.output


def test_engine_timeout_kills_the_command_and_the_sandbox_survives(live: DockerSandbox) -> None:
    started = time.monotonic()
    result = live.run("sleep 30 & sleep 30", 1)
    assert result.timed_out and result.exit_code is None
    assert time.monotonic() - started < 10
    assert "sleep 30" not in live.run("ps -eo args", 10).output  # the whole process group went
    assert live.run("echo alive", 10).output == "alive\n"


def test_engine_close_removes_container_and_network(engine: Any, tmp_path: Path) -> None:
    sandbox = DockerSandbox(tmp_path / "ws", config=DockerConfig(image=ENGINE_IMAGE), client=engine)
    container_id, network_id = sandbox._container.id, sandbox._network.id
    sandbox.run("sleep 300 >/dev/null 2>&1 &", 10)  # something still running
    sandbox.close()
    assert not engine.containers.list(all=True, filters={"id": container_id})
    assert not engine.networks.list(filters={"id": network_id})
