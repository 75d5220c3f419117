"""One trial end to end outside Dagster: sandbox, replay agent, grader, files and row; every infra path a row."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mcp_evals_pipeline.agents.base import MissingCredentials
from mcp_evals_pipeline.contracts.transcript import read_transcript
from mcp_evals_pipeline.store import TrialStore
from mcp_evals_pipeline.trial_dir import read_trial_records
from mcp_evals_pipeline.trials import TrialSpec, parse_trial_key, run_trial, trial_key
from mcp_evals_pipeline.versions import GRADER_VERSION

from .conftest import TASKS

TASK = "py-v4-01-basic-tool-server"


def spec(**kw) -> TrialSpec:
    base = {"task_id": TASK, "condition": "noskill+blank", "trial": 1, "batch_date": "2026-11-30",
            "agent": "replay", "skip_judge": True}
    return TrialSpec(**{**base, **kw})


@pytest.fixture
def env(tmp_path: Path) -> tuple[TrialStore, Path]:
    return TrialStore(tmp_path / "evals.duckdb"), tmp_path / "runs"


def test_trial_keys_round_trip() -> None:
    assert parse_trial_key(trial_key("py-v4-01-basic-tool-server", "skill+blank", 3)) == (
        "py-v4-01-basic-tool-server", "skill+blank", 3)
    with pytest.raises(ValueError, match="not a trial key"):
        parse_trial_key("py-v4-01--noskill+blank")


def test_a_passing_replay_trial_leaves_files_and_a_row(env: tuple[TrialStore, Path]) -> None:
    store, runs = env
    session = TASKS / TASK / "sessions" / "pass-1.jsonl"
    record = run_trial(spec(options={"session": str(session)}), store=store, results_root=runs)
    assert record.valid and record.grade.contract_pass and record.grade.failure_code is None
    trial_dir = runs / record.run_id / "trials" / record.trial_name
    assert {p.name for p in trial_dir.iterdir()} >= {"trial.json", "transcript.jsonl", "memo.md", "workspace"}
    assert (trial_dir / "workspace" / "server.py").exists()
    assert "skipped" in (trial_dir / "memo.md").read_text().lower()
    assert record.prompt_hash == json.loads((TASKS / "prompt-hashes.lock.json").read_text())[TASK]
    rows = store.query("SELECT task, contract_pass, valid, attempt, grader_version, sdk_path FROM trials")
    assert rows == [{"task": TASK, "contract_pass": True, "valid": True, "attempt": 1, "grader_version": GRADER_VERSION,
                     "sdk_path": "official-sdk"}]


def test_rerunning_a_trial_adds_an_attempt_and_keeps_the_first(env: tuple[TrialStore, Path]) -> None:
    store, runs = env
    fail = TASKS / TASK / "sessions" / "fail-wrong-sum.jsonl"
    first = run_trial(spec(options={"session": str(fail)}), store=store, results_root=runs)
    assert first.valid and first.grade.failure_code == "contract.calls"
    second = run_trial(spec(options={"session": str(TASKS / TASK / "sessions" / "pass-2.jsonl")}),
                       store=store, results_root=runs)
    assert second.attempt == 2 and second.grade.contract_pass
    run_dir = runs / second.run_id
    assert sorted(r.attempt for r in read_trial_records(run_dir)) == [1, 2]
    assert (run_dir / "trials" / second.trial_name / "previous" / "attempt-1" / "trial.json").exists()
    rows = store.query("SELECT attempt, is_current, contract_pass FROM trial_attempts ORDER BY attempt")
    assert rows == [{"attempt": 1, "is_current": False, "contract_pass": False},
                    {"attempt": 2, "is_current": True, "contract_pass": True}]


def test_a_sandbox_that_cannot_be_prepared_is_an_invalid_row(env: tuple[TrialStore, Path], tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    store, runs = env
    monkeypatch.setenv("MCP_EVALS_SKILL_DIR", str(tmp_path / "no-such-skill"))
    record = run_trial(spec(condition="skill+blank"), store=store, results_root=runs)
    assert not record.valid and record.invalid_reason == "infra.sandbox"
    assert "no-such-skill" in (record.error or "")
    assert store.query("SELECT valid, invalid_reason FROM trials") == [
        {"valid": False, "invalid_reason": "infra.sandbox"}]


def test_a_crashing_agent_session_is_an_invalid_row(env: tuple[TrialStore, Path], tmp_path: Path) -> None:
    store, runs = env
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"type": "assistant", "text": "hi"}\nthis is not json\n')
    record = run_trial(spec(options={"session": str(broken)}), store=store, results_root=runs)
    assert not record.valid and record.invalid_reason == "infra.agent"
    assert store.query("SELECT count(*) AS n FROM trials WHERE NOT valid") == [{"n": 1}]


def test_a_live_agent_without_its_key_fails_before_any_sandbox(env: tuple[TrialStore, Path],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    store, runs = env
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(MissingCredentials, match="OPENAI_API_KEY"):
        run_trial(spec(agent="openai"), store=store, results_root=runs)
    assert not runs.exists()


def test_skill_condition_copies_the_skill_and_points_the_prompt_to_it(env: tuple[TrialStore, Path]) -> None:
    store, runs = env
    record = run_trial(spec(condition="skill+scaffold", options={
        "session": str(TASKS / TASK / "sessions" / "pass-1.jsonl")}), store=store, results_root=runs)
    workspace = runs / record.run_id / "trials" / record.trial_name / "workspace"
    assert (workspace / ".agents" / "skills" / "mcp-python-server" / "SKILL.md").exists()
    assert record.grade.contract_pass, record.grade.first_failure
    transcript = (workspace.parent / "transcript.jsonl").read_text()
    assert ".agents/skills/mcp-python-server/" in transcript  # the prompt the agent got names the skill


SECRET = "acme-secret-value"
# The graded server dumps its environment and what its working directory holds to stderr (server.log) at start.
ENV_DUMP = ('if __name__ == "__main__":\n    import sys\n'
            '    print("SERVER-ENV " + json.dumps({"env": dict(os.environ), "files": sorted(os.listdir("."))}),'
            ' file=sys.stderr, flush=True)\n')


def test_agent_env_keys_reach_only_the_agent_phase(env: tuple[TrialStore, Path], tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The values of a task's agentEnvKeys reach the agent phase (the files it is told to source) and nothing after
    it: not the graded server's environment nor its working directory, not server.log, not the workspace snapshot,
    not the record. What the agent's own commands print (here it echoes the value) is kept in the transcript
    redacted, as every file of the trial is; the harness never writes a value there itself (the prompt names the
    variables only)."""
    store, runs = env
    tasks = tmp_path / "tasks"
    shutil.copytree(TASKS / TASK, tasks / TASK)
    contract = json.loads((tasks / TASK / "task.json").read_text())
    (tasks / TASK / "task.json").write_text(json.dumps({**contract, "agentEnvKeys": ["ACME_TOKEN", "UNSET_KEY"]}))
    monkeypatch.setenv("MCP_EVALS_TASKS_DIR", str(tasks))
    monkeypatch.setenv("ACME_TOKEN", SECRET)  # in the harness's own environment, as a real key would be
    monkeypatch.delenv("UNSET_KEY", raising=False)
    session = tmp_path / "session.jsonl"
    lines = [{"type": "tool", "tool": "shell", "args": {"command": '. ./.mcp-evals-env.sh && echo "seen=$ACME_TOKEN"'}}]
    for line in (TASKS / TASK / "sessions" / "pass-2.jsonl").read_text().splitlines():
        action = json.loads(line)
        if action.get("tool") == "write_file" and action["args"]["path"] == "src/server.py":
            assert 'if __name__ == "__main__":\n' in action["args"]["content"]
            action["args"]["content"] = action["args"]["content"].replace('if __name__ == "__main__":\n', ENV_DUMP)
        lines.append(action)
    session.write_text("".join(json.dumps(line) + "\n" for line in lines))
    record = run_trial(spec(options={"session": str(session)}), store=store, results_root=runs)
    trial_dir = runs / record.run_id / "trials" / record.trial_name
    assert record.grade.contract_pass, record.grade.first_failure

    # The agent had the value, and printed it: the transcript keeps that output, redacted.
    events = read_transcript(trial_dir / "transcript.jsonl")
    echoed = [e for e in events if e.type == "tool_result" and "seen=" in (e.text or "")]
    assert len(echoed) == 1 and "seen=[redacted:ACME_TOKEN]" in (echoed[0].text or "")
    prompt = next(e.text or "" for e in events if e.type == "user")
    assert "ACME_TOKEN" in prompt and ".mcp-evals-env.sh" in prompt and "UNSET_KEY" not in prompt
    assert not [e for e in events if SECRET in e.model_dump_json()]

    # The graded server ran without it: not in its environment, no agent env file beside it.
    server_log = (trial_dir / "server.log").read_text()
    dump = json.loads(next(line for line in server_log.splitlines() if line.startswith("SERVER-ENV "))[11:])
    assert "PORT" in dump["env"] and "pyproject.toml" in dump["files"]  # the dump is the graded server's
    assert "ACME_TOKEN" not in dump["env"] and not [v for v in dump["env"].values() if SECRET in v]
    assert ".env" not in dump["files"] and ".mcp-evals-env.sh" not in dump["files"]
    assert "ACME_TOKEN" not in server_log and SECRET not in server_log  # nor redacted: never there

    # Nothing the trial keeps holds it.
    assert not [name for name in (".env", ".mcp-evals-env.sh") if (trial_dir / "workspace" / name).exists()]
    kept = [p for p in trial_dir.rglob("*") if p.is_file()]
    assert {"trial.json", "memo.md", "server.log", "server.py"} <= {p.name for p in kept}
    assert [p for p in kept if SECRET.encode() in p.read_bytes()] == []


def test_an_interrupt_while_the_box_is_made_leaves_no_key_and_no_verdict(env: tuple[TrialStore, Path], tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGINT/SIGTERM (a cancelled run) while the agent's box is being made: the interrupt goes on up (the run ends
    cancelled; the next attempt records this one as died), the agent-phase key files written just before are gone,
    and no row claims a verdict or an infra failure the harness did not see."""
    import mcp_evals_pipeline.trials as trials

    store, runs = env
    tasks = tmp_path / "tasks"
    shutil.copytree(TASKS / TASK, tasks / TASK)
    contract = json.loads((tasks / TASK / "task.json").read_text())
    (tasks / TASK / "task.json").write_text(json.dumps({**contract, "agentEnvKeys": ["ACME_TOKEN"]}))
    monkeypatch.setenv("MCP_EVALS_TASKS_DIR", str(tasks))
    monkeypatch.setenv("ACME_TOKEN", SECRET)
    seen: list[Path] = []

    def interrupted(box, workspace: Path, extra_env=None):  # type: ignore[no-untyped-def]
        seen.extend(p for p in workspace.iterdir() if SECRET in p.read_text(errors="replace"))
        raise KeyboardInterrupt

    monkeypatch.setattr(trials, "open_agent_box", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_trial(spec(), store=store, results_root=runs)
    assert {p.name for p in seen} == {".env", ".mcp-evals-env.sh"}  # written before the box, as for any trial
    assert [p for p in runs.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()] == []
    assert not list(runs.rglob("trial.json")) and store.query("SELECT count(*) AS n FROM trials") == [{"n": 0}]
