"""Secrets never cross into a trial: canaries planted in the harness's environment and in files outside the
workspace must not reach the agent's command output, the transcript, the server the grader starts, or the
workspace snapshot.

A real trial runs through `run_trial` with the replay agent: a session whose shell commands try every way out
(env, ~/.netrc, a file under the results root, /proc/1/environ, the parent's and the harness's environ, every
/proc/*/environ) and then builds a passing server that prints its whole environment when the grader starts it.

Backends:
- local: only the environment is protected (sanitized env). Files outside the workspace and other processes'
  /proc entries are readable there (the agent runs as the harness's user): that is the local backend's documented
  limit, so only the env canaries are checked.
- hardened: env, files (not mounted), /proc of the host (own pid namespace) and a host process holding the
  canary in its environment are all checked.

The graded server runs in the server box (sandbox/server_box.py) as nobody: it must see none of them either, nor
the harness's processes. Host canaries carry a prefix of their own (HOSTPROBE, not CANARY, which usage-eval worlds
plant on purpose), and one of them has a name the redaction step does not treat as a secret (HOSTPROBE_PLAIN), so
a leak cannot be hidden by redaction: only the boxes keep it out. Every results root a test used is searched.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from mcp_evals_pipeline.contracts.records import TrialRecord
from mcp_evals_pipeline.sandbox.hardened import detect
from mcp_evals_pipeline.store import TrialStore
from mcp_evals_pipeline.trials import TrialSpec, run_trial

from .conftest import REPO, TASKS

TASK = "py-v4-01-basic-tool-server"
ENV_SECRETS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "HF_TOKEN",
               "MCP_EVALS_CANARY", "HOSTPROBE_PLAIN")
# The server prints its whole environment on start, then every /proc/*/environ it can read and how many processes
# it can see whose command line is the harness's (`run_trial`).
SERVER_PROBE = (
    "import sys as _sys, glob as _glob\n"
    "print('SERVER-ENV', dict(os.environ), file=_sys.stderr, flush=True)\n"
    "_seen, _harness = [], 0\n"
    "for _d in _glob.glob('/proc/[0-9]*'):\n"
    "    try:\n"
    "        _harness += 'run_trial' in open(_d + '/cmdline').read()\n"
    "        print('SERVER-PROC-ENV', _d, open(_d + '/environ').read(), file=_sys.stderr, flush=True)\n"
    "        _seen.append(_d)\n"
    "    except OSError:\n"
    "        pass\n"
    "print('SERVER-PROC-SCAN', f'readable={len(_seen)}', f'harness={_harness}', file=_sys.stderr, flush=True)\n"
)


def _canary(name: str) -> str:
    return f"HOSTPROBE-{name}-{uuid.uuid4().hex}"


def _session(tmp_path: Path, probes: list[str]) -> Path:
    """The passing session of the task, with the probes first and the server printing its env."""
    actions = [json.loads(line) for line in (TASKS / TASK / "sessions" / "pass-1.jsonl").read_text().splitlines()
               if line.strip()]
    out = [{"type": "assistant", "text": "Looking for secrets first."}]
    for probe in probes:
        out.append({"type": "tool", "tool": "shell",
                    "args": {"command": f"( {probe} ) 2>&1 | tee -a probes.txt", "timeout_s": 30}})
    for action in actions:
        if action.get("tool") == "write_file" and action["args"]["path"] == "server.py":
            content = action["args"]["content"]
            assert "\nmcp = " in content, "the pass session's server changed shape: update SERVER_PROBE's anchor"
            probed = content.replace("\nmcp = ", "\n" + SERVER_PROBE + "mcp = ", 1)
            action = {**action, "args": {**action["args"], "content": probed}}
        out.append(action)
    path = tmp_path / "leaky-session.jsonl"
    path.write_text("".join(json.dumps(a) + "\n" for a in out))
    return path


_HARNESS = """
import json, sys
from pathlib import Path
from mcp_evals_pipeline.store import TrialStore
from mcp_evals_pipeline.trials import TrialSpec, run_trial
args = json.loads(sys.argv[1])
record = run_trial(TrialSpec(**args["spec"]), store=TrialStore(Path(args["db"])), results_root=Path(args["runs"]))
print(json.dumps({"run_id": record.run_id, "trial_name": record.trial_name}))
"""


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str, *, initial_env: bool,
         extra_probes: list[str] | None = None) -> tuple[TrialRecord, Path, list[str], list[str]]:
    """One real trial. initial_env: the harness runs in a child process whose *initial* environment holds the
    canaries (what /proc/<pid>/environ shows, as with keys exported in CI); otherwise in this process, with the
    canaries set by monkeypatch (visible to os.environ and everything spawned without a sanitized env)."""
    env_canaries = {name: _canary(name) for name in ENV_SECRETS}
    home = tmp_path / "home"
    home.mkdir()
    netrc = _canary("netrc")
    (home / ".netrc").write_text(f"machine api.openai.com login x password {netrc}\n")
    runs = tmp_path / "runs"
    runs.mkdir()
    results_file = _canary("results-root")
    (runs / "secrets.env").write_text(f"TOKEN={results_file}\n")
    probes = [
        "env; printenv OPENAI_API_KEY; set",
        f"cat ~/.netrc {home}/.netrc /root/.netrc",
        f"cat {runs}/secrets.env; ls -la {runs} ..; cat ../../../secrets.env ../../../../secrets.env",
        "tr '\\0' '\\n' < /proc/1/environ",
        "tr '\\0' '\\n' < /proc/$PPID/environ",
        "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f; done",
        *(extra_probes or []),
    ]
    spec = {"task_id": TASK, "condition": "noskill+blank", "trial": 1, "batch_date": "2026-11-30",
            "agent": "replay", "skip_judge": True, "options": {"session": str(_session(tmp_path, probes))}}
    secrets = {**env_canaries, "HOME": str(home), "MCP_EVALS_SANDBOX": backend}
    if initial_env:
        args = json.dumps({"spec": spec, "db": str(tmp_path / "evals.duckdb"), "runs": str(runs)})
        done = subprocess.run([sys.executable, "-c", _HARNESS, args], cwd=REPO, env={**os.environ, **secrets},
                              capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 0, done.stderr[-3000:]
        names = json.loads(done.stdout.strip().splitlines()[-1])
        trial_dir = runs / names["run_id"] / "trials" / names["trial_name"]
        record = TrialRecord.model_validate_json((trial_dir / "trial.json").read_text())
    else:
        for name, value in secrets.items():
            monkeypatch.setenv(name, value)
        record = run_trial(TrialSpec(**spec), store=TrialStore(tmp_path / "evals.duckdb"), results_root=runs)
        trial_dir = runs / record.run_id / "trials" / record.trial_name
    return record, trial_dir, list(env_canaries.values()), [netrc, results_file]


def _texts(trial_dir: Path) -> dict[str, str]:
    """Everything a trial leaves that anyone reads: transcript, server log, record, memo, workspace snapshot."""
    out = {}
    for path in trial_dir.rglob("*"):
        if path.is_file() and not path.is_symlink():
            out[str(path.relative_to(trial_dir))] = path.read_bytes().decode("utf-8", errors="replace")
    return out


def _assert_no_canary(texts: dict[str, str], canaries: list[str]) -> None:
    leaks = [(name, c) for name, text in texts.items() for c in canaries if c in text]
    assert not leaks, f"canaries leaked: {leaks}"


def _assert_results_root_clean(tmp_path: Path, canaries: list[str]) -> None:
    """Every file of the results root and the database the trial wrote (the planted secrets file aside)."""
    found = []
    for path in [*(tmp_path / "runs").rglob("*"), tmp_path / "evals.duckdb"]:
        if path.is_file() and not path.is_symlink() and path.name != "secrets.env":
            data = path.read_bytes()
            found += [(str(path), c) for c in canaries if c.encode() in data]
    assert not found, f"canaries in the results root: {found}"


def _assert_probes_ran(record, trial_dir: Path) -> None:
    assert record.valid and record.grade.contract_pass, (record.error, record.grade.failure_code)
    texts = _texts(trial_dir)
    assert "workspace/probes.txt" in texts, "the probe commands did not run"
    transcript = texts["transcript.jsonl"]
    assert transcript.count('"tool_result"') >= 7
    server_log = texts.get("server.log", "")
    assert "SERVER-ENV" in server_log, "the server did not print its environment"


def test_local_backend_keeps_env_canaries_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record, trial_dir, env_canaries, _files = _run(tmp_path, monkeypatch, "local", initial_env=False)
    assert record.sandbox == "local"
    _assert_probes_ran(record, trial_dir)
    # Only the environment as the harness sees it: the local backend hides neither files nor other processes'
    # /proc entries (its documented limit), so a root agent could read the harness's *initial* environment.
    _assert_no_canary(_texts(trial_dir), env_canaries)
    _assert_results_root_clean(tmp_path, env_canaries)


_support = detect()
needs_hardened = pytest.mark.skipif(
    not _support.can_harden, reason="hardened sandbox unavailable here: " + "; ".join(_support.missing))


@needs_hardened
def test_hardened_backend_keeps_env_file_and_proc_canaries_out(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    record, trial_dir, env_canaries, files = _run(
        tmp_path, monkeypatch, "hardened", initial_env=True,
        extra_probes=["ls / /root /home /work 2>&1; cat /etc/shadow",
                      "for p in $(pgrep -f run_trial) $(pgrep python); do tr '\\0' '\\n' < /proc/$p/environ; done"])
    assert record.sandbox == "hardened"
    _assert_probes_ran(record, trial_dir)
    texts = _texts(trial_dir)
    agent_side = {name: text for name, text in texts.items() if name != "server.log"}
    _assert_no_canary(agent_side, [*env_canaries, *files])
    probes = texts["workspace/probes.txt"]
    assert "No such file or directory" in probes  # /root/.netrc, the host's /proc entries: not mounted
    assert "Permission denied" in probes  # /etc/shadow, the box's own pid 1
    # The server's own environment (the grader's sanitized env) carries none either.
    server_env = next(line for line in texts["server.log"].splitlines() if line.startswith("SERVER-ENV"))
    _assert_no_canary({"server.log SERVER-ENV": server_env}, env_canaries)
    _assert_results_root_clean(tmp_path, [*env_canaries, *files])


def test_the_graded_server_cannot_read_the_harness_environment(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The server box gives the server a pid namespace and /proc of its own and runs it as nobody: no process of
    the harness is visible (so no /proc/<pid>/environ of it is either), and no environ it can read holds a canary.
    No skip: where no box can be made grading fails closed, and this test with it."""
    backend = "hardened" if _support.can_harden else "local"
    record, trial_dir, env_canaries, files = _run(tmp_path, monkeypatch, backend, initial_env=True)
    assert record.valid and record.grade.contract_pass, (record.error, record.grade.failure_code)
    server_log = (trial_dir / "server.log").read_text()
    scan = next(line for line in server_log.splitlines() if line.startswith("SERVER-PROC-SCAN"))
    assert "harness=0" in scan, scan  # the harness process (python -c ... run_trial) is out of sight
    assert "readable=0" not in scan, scan  # the scan ran: the server reads at least its own environ
    _assert_no_canary({"server.log": server_log}, env_canaries)
    _assert_results_root_clean(tmp_path, [*env_canaries, *files])
