"""The one place for filesystem locations. Environment variables override the defaults."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def _env_path(name: str, default: Path) -> Path:
    value = os.environ.get(name)
    return Path(value).expanduser().resolve() if value else default


def tasks_dir() -> Path:
    """Where task directories live (`MCP_EVALS_TASKS_DIR`)."""
    return _env_path("MCP_EVALS_TASKS_DIR", REPO_ROOT / "tasks")


def results_dir() -> Path:
    """Run outputs (`MCP_EVALS_RESULTS_DIR`); the files there are the source of truth."""
    return _env_path("MCP_EVALS_RESULTS_DIR", REPO_ROOT / "eval_results")


def cache_dir() -> Path:
    """Grader caches: the uv download cache and the per-dependency-set environments (`MCP_EVALS_CACHE_DIR`).

    Kept on the same filesystem as the environments so uv can hardlink instead of copying."""
    return _env_path("MCP_EVALS_CACHE_DIR", REPO_ROOT / ".cache")


def prompt_hash_lock() -> Path:
    return tasks_dir() / "prompt-hashes.lock.json"


def runs_dir() -> Path:
    return results_dir() / "runs"


def drafts_dir() -> Path:
    """Task drafts of `mcp-evals serve` (`MCP_EVALS_DRAFTS_DIR`): agent-written task directories, never under
    tasks/ until submitted through the gate."""
    return _env_path("MCP_EVALS_DRAFTS_DIR", results_dir() / "drafts")


def synthesis_dir() -> Path:
    return results_dir() / "synthesis"


def findings_dir() -> Path:
    """One JSON file per finding (mcp_evals_pipeline/findings): the source of truth, published with the rest."""
    return results_dir() / "findings"


def database_path() -> Path:
    """The DuckDB index of the result files (`MCP_EVALS_DB`)."""
    return _env_path("MCP_EVALS_DB", results_dir() / "evals.duckdb")


def dagster_home() -> Path:
    """A project-local Dagster instance, so CLI runs show in the UI (`make ui`: `dg dev`) (`DAGSTER_HOME` wins)."""
    return _env_path("DAGSTER_HOME", REPO_ROOT / ".dagster_home")


DEFAULT_SKILLS = {"python": "mcp-python-server", "node": "mcp-use-typescript"}


def skill_dir(runtime: str = "python") -> Path:
    """The skill copied into `skill+*` workspaces: ours for the task's runtime, or `MCP_EVALS_SKILL_DIR`."""
    default = DEFAULT_SKILLS.get(runtime, DEFAULT_SKILLS["python"])
    return _env_path("MCP_EVALS_SKILL_DIR", REPO_ROOT / "skills" / default)


def scaffold_dir(runtime: str) -> Path:
    """The starter template of `*+scaffold` workspaces, one per runtime."""
    return REPO_ROOT / "scaffolds" / runtime


def pass_rate_floors_path() -> Path:
    """Per agent/model pass-rate floors (`agent/model` -> fraction); they only ratchet up."""
    return _env_path("MCP_EVALS_FLOORS", REPO_ROOT / "pass_rate_floors.json")
