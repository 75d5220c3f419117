"""Conditions: what an agent gets besides the task, named per task kind so that no two kinds share a key.

Build tasks: `skill|noskill` + `scaffold|blank` (our skill in the agent's skill folder; the runtime's scaffold as the
starting workspace). Usage tasks: `bare` (the server's tools alone), `instructions` (the tools and the server's own
instructions text), `docs` (the tools and the suite's docs pack): each usage condition is one change from `bare`,
so its delta against `bare` says what that one change did (seed 004, "one change at a time").
"""

from __future__ import annotations

import hashlib
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

from mcp_evals_pipeline.did_you_mean import suggestion
from mcp_evals_pipeline.paths import scaffold_dir, skill_dir
from mcp_evals_pipeline.tasks.catalog import Task

BUILD_CONDITIONS = ("noskill+blank", "skill+blank", "noskill+scaffold", "skill+scaffold")
USAGE_CONDITIONS = ("bare", "instructions", "docs")
CONDITIONS = BUILD_CONDITIONS + USAGE_CONDITIONS
BASELINE = "noskill+blank"  # the build tasks' baseline (the spec's)
USAGE_BASELINE = "bare"
BASELINES = {"build": BASELINE, "usage": USAGE_BASELINE}

# Agents without a convention for project skills (their runner's `skill_folder`) get a neutral folder the prompt
# names.
DEFAULT_SKILL_FOLDER = ".agents/skills"


def skill_folder(agent: str) -> str:
    """Where `agent` looks for project skills, by its runner in the agent registry."""
    # Imported here: the agents import this module (through contracts.records).
    from mcp_evals_pipeline.agents.registry import AGENTS

    entry = AGENTS.get(agent)
    return (entry.runner.skill_folder if entry else None) or DEFAULT_SKILL_FOLDER


@dataclass(frozen=True)
class Condition:
    name: str
    kind: str  # the task kind it belongs to: build | usage
    skill: bool = False
    scaffold: bool = False
    instructions: bool = False  # usage: the server's instructions text in the prompt
    docs: bool = False  # usage: the suite's docs pack in the prompt

    @classmethod
    def parse(cls, name: str) -> Condition:
        if name in USAGE_CONDITIONS:
            return cls(name, "usage", instructions=name == "instructions", docs=name == "docs")
        if name not in BUILD_CONDITIONS:
            raise ValueError(f"unknown condition {name!r}{suggestion(name, CONDITIONS)} "
                             f"(build tasks: {', '.join(BUILD_CONDITIONS)}; "
                             f"usage tasks: {', '.join(USAGE_CONDITIONS)})")
        skill, workspace = name.split("+")
        return cls(name, "build", skill=skill == "skill", scaffold=workspace == "scaffold")


def tree_hash(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def brief_hash(text: str) -> str | None:
    """What a condition added to the prompt, as a short hash on the trial's record (None for nothing): a docs pack
    or an instructions text that changed between batches is told apart."""
    return hashlib.sha256(text.encode()).hexdigest()[:12] if text else None


def skill_hash(runtimes: set[str] | None = None) -> str | None:
    """The hash of the skill(s) a run's skill conditions received (one per runtime, unless overridden)."""
    roots = sorted({skill_dir(r) for r in (runtimes or {"python"})})
    hashes = [tree_hash(root) for root in roots if root.is_dir()]
    return "+".join(hashes) if hashes else None


AGENT_ENV_FILES = (".env", ".mcp-evals-env.sh")


def write_agent_env(workspace: Path, keys: list[str], environ: dict[str, str]) -> list[str]:
    """The task's `agentEnvKeys` present in the harness's environment, for the agent phase only: written to
    `.env` and a sourceable shell file (the prompt says to source it). Returns the names written."""
    present = {k: environ[k] for k in keys if environ.get(k)}
    if not present:
        return []
    (workspace / ".env").write_text("".join(f"{k}={v}\n" for k, v in present.items()))
    (workspace / ".mcp-evals-env.sh").write_text("".join(f"export {k}={shlex.quote(v)}\n" for k, v in present.items()))
    return sorted(present)


def remove_agent_env(workspace: Path, written: list[str]) -> None:
    """Before grading and before the workspace is kept as the trial's snapshot: the values never outlive the
    agent phase (the server under test gets its settings from the grader, not from these files). Only files we
    wrote go: an agent's own .env of a task without agentEnvKeys is its work."""
    if written:
        for name in AGENT_ENV_FILES:
            (workspace / name).unlink(missing_ok=True)


def prepare_workspace(workspace: Path, task: Task, condition: Condition, agent: str) -> str:
    """Fill a fresh workspace for the condition and return the prompt the agent gets.

    Order: the scaffold template, then the task's starter/ (task files win), then the skill."""
    workspace.mkdir(parents=True, exist_ok=True)
    if condition.scaffold:
        template = scaffold_dir(task.contract.effective_runtime)
        if not template.is_dir():
            raise FileNotFoundError(f"no scaffold template for runtime {task.contract.effective_runtime}: {template}")
        shutil.copytree(template, workspace, dirs_exist_ok=True)
    if task.starter_dir is not None:
        shutil.copytree(task.starter_dir, workspace, dirs_exist_ok=True)
    prompt = task.prompt
    if condition.skill:
        source = skill_dir(task.contract.effective_runtime)
        if not source.is_dir():
            raise FileNotFoundError(f"skill directory {source} does not exist (MCP_EVALS_SKILL_DIR)")
        target = Path(skill_folder(agent)) / source.name
        shutil.copytree(source, workspace / target, dirs_exist_ok=True)
        prompt += (f"\n\n---\nA skill for this kind of work is in `{target.as_posix()}/` in your workspace: "
                   "read its SKILL.md before you start.\n")
    return prompt
