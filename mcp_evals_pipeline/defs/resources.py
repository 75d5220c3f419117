"""Resources: where results and the database live (overridable per deployment)."""


from pathlib import Path

import dagster as dg

from mcp_evals_pipeline.paths import database_path, runs_dir
from mcp_evals_pipeline.store import TrialStore


class EvalStore(dg.ConfigurableResource):
    """The result files (the source of truth) and their DuckDB index."""

    database: str = ""  # empty: eval_results/evals.duckdb (MCP_EVALS_DB)
    runs_root: str = ""  # empty: eval_results/runs (MCP_EVALS_RESULTS_DIR)
    row_writer: str = ""  # empty: MCP_EVALS_ROW_WRITER, else `trial` (store.ROW_WRITERS)

    def store(self) -> TrialStore:
        return TrialStore(Path(self.database) if self.database else database_path(), writer=self.row_writer)

    def runs(self) -> Path:
        return Path(self.runs_root) if self.runs_root else runs_dir()


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(resources={"eval_store": EvalStore()})
