"""Agents are boxed unless told otherwise (issue 23, "Agents boxed unless told otherwise").

- The default box is `hardened` for every agent; `docker` where MCP_EVALS_SANDBOX says so; `local` only by name.
- A canary key in the harness's *initial* environment (OPENAI_API_KEY=sk-canary-..., what /proc/<pid>/environ
  shows, as with a key exported in CI): the real openai runner, driven by a scripted local model server, makes the
  agent's shell read its parent's environ, `env`, /proc/1/environ and every /proc/*/environ, and write what it found
  into the workspace. In the default box no tool result the model receives holds the canary. Asked for `local` by
  name, the same agent does read it (the negative: the attack is real), and still no file of the trial holds it:
  transcript, workspace snapshot and logs pass the same redaction as every record.
- Where no box can be made (bubblewrap hidden from PATH) the trial is `infra.sandbox` with the reason, never run
  unboxed.
- `local` by name is printed on the run and recorded on the trial.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from mcp_evals_pipeline.agents.registry import AGENTS
from mcp_evals_pipeline.contracts.records import TrialRecord
from mcp_evals_pipeline.defs.trials.assets import TrialConfig
from mcp_evals_pipeline.redaction import redact_tree
from mcp_evals_pipeline.sandbox import SandboxError
from mcp_evals_pipeline.sandbox.choice import UNBOXED, choose_backend
from mcp_evals_pipeline.sandbox.hardened import detect

from .conftest import REPO
from .support.cli_env import cli_env
from .support.openai_server import ScriptedOpenAI, call, reply
from .test_fresh_machine import _path_without

TASK = "py-v4-01-basic-tool-server"
_SUPPORT = detect()
needs_box = pytest.mark.skipif(not _SUPPORT.can_harden,
                               reason="the hardened sandbox is not available here: " + "; ".join(_SUPPORT.missing))

# Every way an agent's shell could find the harness's key, each output also appended to a file in the workspace.
PROBES = [
    "tr '\\0' '\\n' < /proc/$PPID/environ",
    "env",
    "tr '\\0' '\\n' < /proc/1/environ",
    "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f; done",
    "printenv OPENAI_API_KEY",
]

_HARNESS = """
import json, sys
from pathlib import Path
from mcp_evals_pipeline.store import TrialStore
from mcp_evals_pipeline.trials import TrialSpec, run_trial
args = json.loads(sys.argv[1])
record = run_trial(TrialSpec(**args["spec"]), store=TrialStore(Path(args["db"])), results_root=Path(args["runs"]))
print(json.dumps({"run_id": record.run_id, "trial_name": record.trial_name}))
"""


def _script(canary: str) -> list[dict[str, Any]]:
    shells = [call("shell", {"command": f"( {probe} ) 2>&1 | tee -a stolen.txt"}) for probe in PROBES]
    # The model itself also writes the key into the workspace (as if it had it from elsewhere): the snapshot and
    # the transcript's tool call must come out redacted in any box.
    planted = call("write_file", {"path": "from-the-model.txt", "content": f"key={canary}\n"})
    return [reply("Looking for keys first.", shells), reply(None, [planted]), reply("Done.")]


def _harness_env(tmp_path: Path, canary: str, **extra: str) -> dict[str, str]:
    env = {**os.environ, "OPENAI_API_KEY": canary, **extra}
    for name in ("MCP_EVALS_SANDBOX", "MCP_EVALS_SANDBOX_NET", "OPENAI_BASE_URL"):
        if name not in extra:
            env.pop(name, None)
    return env


def _trial(tmp_path: Path, env: dict[str, str], canary: str, sandbox: str | None) -> tuple[TrialRecord, Path,
                                                                                              ScriptedOpenAI]:
    """One real openai trial run by a child harness whose initial environment holds the canary."""
    runs = tmp_path / "runs"
    with ScriptedOpenAI(_script(canary)) as api:
        spec = {"task_id": TASK, "condition": "noskill+blank", "trial": 1, "batch_date": "2026-11-30",
                "agent": "openai", "skip_judge": True, "time_budget_s": 120.0, "sandbox": sandbox,
                "options": {"base_url": api.base_url, "max_retries": 0}}
        args = json.dumps({"spec": spec, "db": str(tmp_path / "evals.duckdb"), "runs": str(runs)})
        done = subprocess.run([sys.executable, "-c", _HARNESS, args], cwd=REPO, env=env, capture_output=True,
                              text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    names = json.loads(done.stdout.strip().splitlines()[-1])
    trial_dir = runs / names["run_id"] / "trials" / names["trial_name"]
    return TrialRecord.model_validate_json((trial_dir / "trial.json").read_text()), trial_dir, api


def _tool_results(api: ScriptedOpenAI) -> str:
    """Everything the agent's tools gave back to the model (what the agent 'saw')."""
    return "\n".join(str(m.get("content")) for body in api.requests for m in body["messages"] if m["role"] == "tool")


def _files_holding(root: Path, needle: str) -> list[str]:
    """Every file under root (the trial's directory, the database beside it) whose bytes hold `needle`."""
    return [str(p.relative_to(root)) for p in root.rglob("*")
            if p.is_file() and not p.is_symlink() and needle.encode() in p.read_bytes()]


def test_the_default_box_is_hardened_for_every_agent_and_local_only_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCP_EVALS_SANDBOX", raising=False)
    assert {"openai", "codex", "claude", "replay"} <= set(AGENTS)
    for agent in AGENTS:
        chosen = choose_backend(agent)
        assert (chosen.backend, chosen.source, chosen.unboxed) == ("hardened", "default", False), agent
    # The UI, backfills and schedules launch the trial asset with its run config's defaults: nothing set.
    assert TrialConfig().sandbox is None and choose_backend(TrialConfig().agent, TrialConfig().sandbox).backend == (
        "hardened")
    monkeypatch.setenv("MCP_EVALS_SANDBOX", "docker")
    assert choose_backend("codex").backend == "docker"
    assert choose_backend("codex", "hardened").backend == "hardened"  # asked for beats the environment
    local = choose_backend("openai", "local")
    assert local.unboxed and UNBOXED in local.describe() and "--sandbox local" in local.describe()
    monkeypatch.setenv("MCP_EVALS_SANDBOX", "local")
    assert choose_backend("claude").unboxed and "MCP_EVALS_SANDBOX=local" in choose_backend("claude").describe()
    monkeypatch.setenv("MCP_EVALS_SANDBOX", "bwrap")
    with pytest.raises(SandboxError, match="MCP_EVALS_SANDBOX: unknown sandbox backend 'bwrap'"):
        choose_backend("openai")


@needs_box
def test_an_agent_in_the_default_box_cannot_read_the_canary_and_no_file_holds_it(tmp_path: Path) -> None:
    canary = f"sk-canary-{uuid.uuid4().hex}"
    record, trial_dir, api = _trial(tmp_path, _harness_env(tmp_path, canary), canary, sandbox=None)
    assert record.sandbox == "hardened" and record.isolation and record.isolation.startswith("bwrap"), record
    assert record.valid, record.error
    seen = _tool_results(api)
    assert seen.count("exit code") >= len(PROBES), seen  # every probe ran in the box
    assert canary not in seen  # not from its parent, not from env, not from any /proc/*/environ
    assert "No such file or directory" in seen or "Permission denied" in seen  # the host's /proc is not there
    # No file of the trial holds it: the key the model wrote is redacted in the snapshot and the transcript.
    assert _files_holding(tmp_path, canary) == []
    assert (trial_dir / "workspace" / "from-the-model.txt").read_text() == "key=[redacted:OPENAI_API_KEY]\n"
    assert "[redacted:OPENAI_API_KEY]" in (trial_dir / "transcript.jsonl").read_text()


def test_local_by_name_is_recorded_and_its_transcript_redacted(tmp_path: Path) -> None:
    """The negative: unboxed, the agent does read the key from its parent's environment; every file of the trial
    is redacted all the same, and the trial says it was UNBOXED."""
    canary = f"sk-canary-{uuid.uuid4().hex}"
    record, trial_dir, api = _trial(tmp_path, _harness_env(tmp_path, canary), canary, sandbox="local")
    assert record.sandbox == "local" and record.isolation and record.isolation.startswith(UNBOXED), record
    assert canary in _tool_results(api)  # the attack is real where nothing boxes the agent
    assert _files_holding(tmp_path, canary) == []
    stolen = (trial_dir / "workspace" / "stolen.txt").read_text()
    assert "OPENAI_API_KEY=[redacted:OPENAI_API_KEY]" in stolen
    transcript = (trial_dir / "transcript.jsonl").read_text()
    assert transcript.count("[redacted:OPENAI_API_KEY]") >= 2


@pytest.mark.skipif(not _SUPPORT.bwrap, reason="the negative needs bubblewrap installed (CI installs it)")
def test_without_a_box_the_trial_is_infra_sandbox_with_the_reason_never_unboxed(tmp_path: Path) -> None:
    canary = f"sk-canary-{uuid.uuid4().hex}"
    env = _harness_env(tmp_path, canary, PATH=_path_without(tmp_path, "bwrap"))
    record, trial_dir, api = _trial(tmp_path, env, canary, sandbox=None)
    assert not record.valid and record.invalid_reason == "infra.sandbox", record
    assert record.sandbox == "hardened" and record.isolation is None
    assert "bubblewrap is not installed" in (record.error or "") and record.retryable is False, record.error
    assert api.requests == []  # the agent never ran: no model call, nothing unboxed
    assert not (trial_dir / "workspace" / "stolen.txt").exists()


def test_redaction_of_a_trial_directory_leaves_links_fifos_and_hard_links_alone(tmp_path: Path) -> None:
    secret = f"sk-canary-{uuid.uuid4().hex}"
    outside = tmp_path / "outside.txt"
    outside.write_text(f"host file {secret}\n")
    trial = tmp_path / "trial"
    (trial / "workspace" / "deep").mkdir(parents=True)
    (trial / "transcript.jsonl").write_text(f'{{"text": "{secret}"}}\n' * 3)
    big = trial / "workspace" / "deep" / "one-line.bin"
    big.write_bytes(b"x" * ((1 << 20) - 5) + secret.encode() + b"\0tail")  # across the 1 MiB read boundary
    big.chmod(0o640)
    (trial / "workspace" / "link").symlink_to(outside)
    (trial / "workspace" / "dir-link").symlink_to(tmp_path, target_is_directory=True)
    os.link(outside, trial / "workspace" / "hard")
    os.mkfifo(trial / "workspace" / "fifo")
    changed = redact_tree(trial, {secret: "OPENAI_API_KEY"})
    assert changed == {"transcript.jsonl": 3, "workspace/deep/one-line.bin": 1, "workspace/hard": 1}
    assert (trial / "transcript.jsonl").read_text() == '{"text": "[redacted:OPENAI_API_KEY]"}\n' * 3
    assert big.read_bytes().endswith(b"[redacted:OPENAI_API_KEY]\0tail") and oct(big.stat().st_mode)[-3:] == "640"
    # The host file behind the symlink and the hard link is untouched; the hard link now names a redacted copy.
    assert secret in outside.read_text() and secret not in (trial / "workspace" / "hard").read_text()
    assert (trial / "workspace" / "link").is_symlink() and (trial / "workspace" / "fifo").is_fifo()
    assert not [p for p in trial.rglob("*redacting*")]


def test_eval_prints_and_records_local_by_name(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    env = cli_env(tmp_path, tmp_path_factory.getbasetemp() / "pycache")
    env.pop("MCP_EVALS_SANDBOX", None)
    done = subprocess.run([sys.executable, "-m", "mcp_evals_pipeline.cli", "eval", "--agent", "replay", "--task",
                           TASK, "--no-verify", "--skip-judge", "--batch-id", "unboxed", "--sandbox", "local"],
                          cwd=REPO, env=env, capture_output=True, text=True, check=False, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"{UNBOXED}: agent replay runs on the host with no isolation (--sandbox local)" in done.stderr
    trial = json.loads(next((tmp_path / "results" / "runs").glob("unboxed--replay--*/trials/*/trial.json"))
                       .read_text())
    assert trial["sandbox"] == "local" and trial["isolation"].startswith(f"{UNBOXED} via --sandbox local")


def test_eval_refuses_before_any_work_when_the_agents_box_cannot_be_made(tmp_path: Path,
                                                                         tmp_path_factory: pytest.TempPathFactory
                                                                         ) -> None:
    """Grading boxed in containers, but no bubblewrap for the agents' default box: `eval` stops at once with one
    line naming it, before the instance or any file exists (not a batch of infra.sandbox trials)."""
    from .test_docker_config import _engine_skip_reason

    if not _SUPPORT.bwrap:
        pytest.skip("the negative needs bubblewrap installed (CI installs it)")
    if (reason := _engine_skip_reason()) is not None:
        pytest.skip(reason)
    env = cli_env(tmp_path, tmp_path_factory.getbasetemp() / "pycache")
    env.pop("MCP_EVALS_SANDBOX", None)
    env.update({"MCP_EVALS_GRADER_BOX": "docker", "PATH": _path_without(tmp_path, "bwrap")})
    done = subprocess.run([sys.executable, "-m", "mcp_evals_pipeline.cli", "eval", "--agent", "openai", "--task",
                           TASK, "--no-verify", "--skip-judge"], cwd=REPO, env={**env, "OPENAI_API_KEY": "sk-x"},
                          capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 2, done
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "hardened sandbox for agent openai is not available" in lines[0], done.stderr
    assert "bubblewrap is not installed" in lines[0] and "MCP_EVALS_SANDBOX=docker" in lines[0], lines
    assert not (tmp_path / "dh").exists() and not (tmp_path / "results").exists()
