"""The environment of `mcp-evals` subprocesses in tests: their own results, instance and database under tmp_path,
no model key, and compiled bytecode kept between them.

With PYTHONDONTWRITEBYTECODE set and no bytecode in the venv, every subprocess compiles dagster and the rest from
source (about 7 s of CPU each on the CI machine). PYTHONPYCACHEPREFIX sends the bytecode to one directory for the
test session instead (the venv is never written), so only the first subprocess pays.
"""

from __future__ import annotations

import os
from pathlib import Path


def cli_env(tmp_path: Path, pycache: Path) -> dict[str, str]:
    env = {**os.environ, "MCP_EVALS_RESULTS_DIR": str(tmp_path / "results"), "DAGSTER_HOME": str(tmp_path / "dh"),
           "MCP_EVALS_DB": str(tmp_path / "results" / "evals.duckdb"), "PYTHONPYCACHEPREFIX": str(pycache)}
    for name in ("OPENAI_API_KEY", "MCP_EVALS_TASKS_DIR", "PYTHONDONTWRITEBYTECODE"):
        env.pop(name, None)
    return env
