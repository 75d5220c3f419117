"""The composite action: its script (scripts/ci_eval.sh, what action.yml runs) on a replay batch writes the three
outputs, the step summary, the JSON summary and the JUnit file, and exits by the floor; the workflows pass only
inputs the action has, and their crons are the Dagster schedules' calendar."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from .conftest import REPO

TASK = "py-v4-01-basic-tool-server"


def _outputs(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


def _action(tmp_path: Path, name: str, **inputs: str) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    work = tmp_path / name
    work.mkdir()
    outputs, summary = work / "github_output", work / "step_summary.md"
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "home"), "MCP_EVALS_RESULTS_DIR": str(tmp_path / "results"),
           "GITHUB_OUTPUT": str(outputs), "GITHUB_STEP_SUMMARY": str(summary), "RUNNER_TEMP": str(work),
           **{f"INPUT_{k.upper()}": v for k, v in inputs.items()}}
    done = subprocess.run([str(REPO / "scripts" / "ci_eval.sh")], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=600)
    return done, outputs, summary


@pytest.mark.long
def test_the_actions_script_writes_its_outputs_and_exits_by_the_floor(tmp_path: Path) -> None:
    inputs = {"agent": "replay", "tasks": TASK, "trials": "2", "sandbox": "local", "skip_judge": "true",
              "verify": "false", "batch_date": "2026-11-30"}
    above, outputs, summary = _action(tmp_path, "above", min_pass_rate="40", **inputs)
    assert above.returncode == 0, above.stdout + above.stderr[-3000:]
    found = _outputs(outputs)
    assert found["pass-rate"] == "50"  # the recorded t1 fails, t2 passes
    assert Path(found["run-dir"]).is_dir() and Path(found["report"]).is_file()
    assert Path(found["summary"]).is_file() and Path(found["junit"]).is_file()
    table = summary.read_text()
    assert "| build | mcp-python | noskill+blank (baseline) | 1 / 2 | 50.0%" in table and "Gate: exit 0" in table

    below, outputs, summary = _action(tmp_path, "below", min_pass_rate="60", **inputs)
    assert below.returncode == 1, below.stdout + below.stderr[-3000:]
    assert _outputs(outputs)["pass-rate"] == "50"  # written whatever the gate says
    assert "is below the floor 60.0%" in summary.read_text()


def test_workflows_use_only_the_actions_inputs_and_the_schedules_calendar() -> None:
    from mcp_evals_pipeline.batch_calendar import BATCH_CRON, SYNTHESIS_CRON
    from mcp_evals_pipeline.defs.reports.schedules import synthesis_schedule
    from mcp_evals_pipeline.defs.trials.schedules import baseline_schedule

    action = yaml.safe_load((REPO / "action.yml").read_text())
    inputs = set(action["inputs"])
    script = (REPO / "scripts" / "ci_eval.sh").read_text()
    step_env = next(s for s in action["runs"]["steps"] if s.get("id") == "eval")["env"]
    for name in inputs - {"openai-api-key", "anthropic-api-key"}:  # every input reaches the script and is read
        variable = "INPUT_" + name.upper().replace("-", "_")
        assert step_env[variable] == "${{ inputs." + name + " }}", name
        assert variable in script, f"{variable} is passed but never read"
    assert {"run-dir", "report", "pass-rate"} <= set(action["outputs"])
    workflows = {p.name: yaml.safe_load(p.read_text()) for p in (REPO / ".github" / "workflows").glob("*.yml")}
    assert set(workflows) == {"evals.yml", "weekly-synthesis.yml"}
    used = [s for w in workflows.values() for job in w["jobs"].values() for s in job["steps"] if s.get("uses") == "./"]
    assert used, "the baseline workflow runs the local action"
    for step in used:
        assert set(step.get("with", {})) <= inputs, set(step["with"]) - inputs
    # YAML reads the key `on` as True
    crons = {name: [c["cron"] for c in (w.get("on") or w.get(True))["schedule"]] for name, w in workflows.items()}
    assert crons == {"evals.yml": [BATCH_CRON], "weekly-synthesis.yml": [SYNTHESIS_CRON]}
    assert (baseline_schedule.cron_schedule, synthesis_schedule.cron_schedule) == (BATCH_CRON, SYNTHESIS_CRON)
    assert re.search(r"publish --to", (REPO / ".github" / "workflows" / "evals.yml").read_text())
