"""Trials in the `docker` sandbox on a real engine (scripts/docker_engine.sh starts one for `make test`): a replay
trial whose row and files have the shape of a local one, and the REAL codex and claude CLIs inside the container
against the scripted model servers on the host's loopback (relayed in: the container keeps its --internal network
and never holds the key), for a build task graded by the real grader and for a usage task whose calls land in the
world. Skipped, with the reason, where no engine or sandbox image is reachable."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from mcp_evals_pipeline.grader.boxes import SWITCH_ENV
from mcp_evals_pipeline.sandbox.base import SandboxError
from mcp_evals_pipeline.sandbox.docker_backend import DockerConfig, DockerSandbox
from mcp_evals_pipeline.store import TrialStore
from mcp_evals_pipeline.trials import TrialSpec, run_trial

from .test_cli_agents_hardened import CASES, TASK_ID, boxed_claude_trial, boxed_codex_trial, boxed_usage_trial
from .test_docker_config import ENGINE_IMAGE, _engine_skip_reason

_SKIP = _engine_skip_reason()
pytestmark = pytest.mark.skipif(_SKIP is not None, reason=_SKIP or "")


def _shape(value: object) -> object:
    """A record's shape: its keys, nested, and which values are set (not what they are)."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(v) for v in value[:1]]
    return value is not None


def _files(trial_dir: Path) -> set[str]:
    return {p.relative_to(trial_dir).as_posix() for p in trial_dir.rglob("*")
            if p.is_file() and "workspace" not in p.relative_to(trial_dir).parts}


def test_a_replay_trial_in_docker_has_the_row_and_files_of_a_local_one(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """All of the docker trial in containers: the agent's sandbox and grading's boxes (MCP_EVALS_GRADER_BOX=docker);
    the local one's grading in bubblewrap; the same verdict."""
    records = {}
    for backend in ("local", "docker"):
        monkeypatch.setenv(SWITCH_ENV, "docker" if backend == "docker" else "1")
        records[backend] = run_trial(
            TrialSpec(task_id=TASK_ID, condition="noskill+blank", trial=2, batch_date="2026-11-30", agent="replay",
                      sandbox=backend), store=TrialStore(tmp_path / backend / "evals.duckdb"),
            results_root=tmp_path / backend / "runs")
    local, docker = records["local"], records["docker"]
    assert docker.sandbox == "docker" and docker.valid, docker.error
    assert "read-only root" in (docker.isolation or "") and "internal bridge, no egress" in (docker.isolation or "")
    assert (docker.grade.contract_pass, docker.grade.failure_code) == (local.grade.contract_pass,
                                                                       local.grade.failure_code)
    assert [c.id for c in docker.grade.checks] == [c.id for c in local.grade.checks]
    assert docker.grade.contract_pass and docker.grade.isolation["start"].startswith("docker container")
    assert local.grade.isolation["start"].startswith("bwrap")
    dirs = {b: tmp_path / b / "runs" / r.run_id / "trials" / r.trial_name for b, r in records.items()}
    assert _files(dirs["docker"]) == _files(dirs["local"])
    shapes = {b: _shape(json.loads((d / "trial.json").read_text())) for b, d in dirs.items()}
    assert shapes["docker"] == shapes["local"]
    rows = {}
    for backend in records:
        with duckdb.connect(str(tmp_path / backend / "evals.duckdb"), read_only=True) as con:
            cursor = con.execute("SELECT * FROM trials")
            rows[backend] = dict(zip([d[0] for d in cursor.description], cursor.fetchone(), strict=True))
    assert {k: v is None for k, v in rows["docker"].items()} == {k: v is None for k, v in rows["local"].items()}
    assert rows["docker"]["sandbox"] == "docker"
    workspace = dirs["docker"] / "workspace"
    assert workspace.stat().st_uid == dirs["local"].joinpath("workspace").stat().st_uid  # handed back at close


@pytest.mark.parametrize(("server", "passes"), CASES)
def test_codex_in_a_container_grades_as_scripted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 server: str, passes: bool) -> None:
    record = boxed_codex_trial(tmp_path, monkeypatch, server, passes, "docker")
    assert "internal bridge, no egress" in (record.isolation or "")  # the key proxy reached over the relay


@pytest.mark.parametrize(("server", "passes"), CASES)
def test_claude_in_a_container_grades_as_scripted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  server: str, passes: bool) -> None:
    boxed_claude_trial(tmp_path, monkeypatch, server, passes, "docker")


@pytest.mark.parametrize("agent", ["codex", "claude"])
def test_a_cli_in_a_container_reaches_a_usage_tasks_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           agent: str) -> None:
    boxed_usage_trial(tmp_path, monkeypatch, agent, "docker")


def test_a_private_dir_and_the_tools_in_a_container(tmp_path: Path) -> None:
    from mcp_evals_pipeline.paths import cache_dir

    box = DockerSandbox(tmp_path / "ws", config=DockerConfig(image=ENGINE_IMAGE, memory="512m"))
    try:
        private = box.private_dir("agent-")
        assert not private.is_relative_to(box.workspace)
        (private / "key").write_text("secret\n")
        done = box.run(f"cat {private}/key && touch {private}/written && id -u", 30)
        assert done.exit_code == 0 and "secret" in done.output and "65532" in done.output, done.output
        tools = cache_dir() / "agent-clis"
        listed = box.run(f"ls {tools} >/dev/null && touch {tools}/x", 30)
        assert listed.exit_code != 0 and "Read-only file system" in listed.output, listed.output
        with pytest.raises(SandboxError, match="no egress"):
            box.allow_endpoint("https://api.openai.com/v1")  # only the host's loopback is relayed in
    finally:
        box.close()
    assert not private.exists()
