"""Read-only SQL over the results store (the `trials` view, `runs` and the SQL model tables), for `query_results`.

Three fences, each enough alone for what it guards: the statement is parsed by DuckDB's own parser and refused
unless it is one SELECT (a `WITH ... SELECT` is one) that calls no table function outside a short list of ones
that read no file, and names no file as a table (`FROM 'x.csv'`); the database file is opened `read_only=True`,
so no statement can write it; and the connection has external access off and its configuration locked, so nothing
reaches the file system or the network even through what the parser check missed. A row cap (the answer says when
it was hit) and a time limit (the connection is interrupted) keep one question from holding the server.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
from pydantic import Field

from mcp_evals_pipeline.contracts.task_base import ContractModel
from mcp_evals_pipeline.paths import database_path

DEFAULT_MAX_ROWS = 500
MAX_MAX_ROWS = 5000
DEFAULT_TIMEOUT_S = 10.0
MAX_TIMEOUT_S = 60.0
INTERRUPT_GRACE_S = 5.0
# Table functions that read nothing but the query's own arguments or the catalog: every other one (read_csv,
# read_parquet, read_text, glob, pragma_*, the extensions' scanners) is refused by name, before it runs.
ALLOWED_TABLE_FUNCTIONS = frozenset({"range", "generate_series", "unnest", "duckdb_tables", "duckdb_views",
                                     "duckdb_columns"})


class QueryRefused(ValueError):
    """A query that is not one plain SELECT over the store, or a store that cannot be read: the reason."""


class QueryResult(ContractModel):
    columns: list[str] = Field(description="The result's column names, in order.")
    rows: list[list[Any]] = Field(description="The rows (at most the cap), each a list of values in column order; "
                                              "dates, timestamps and decimals as strings.")
    row_count: int = Field(description="How many rows are returned.")
    truncated: bool = Field(description="True when the query had more rows than the cap: only the first are here.")
    note: str = Field(description="What the answer holds, and what was left out when it was truncated.")


@contextmanager
def read_only_connection(db: Path | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
    """The store opened read-only with external access off; QueryRefused when there is no store yet or it is
    busy (a writer holds it)."""
    path = db or database_path()
    if not path.is_file():
        raise QueryRefused(f"no results database at {path} yet: `make run` (or `mcp-evals eval`, `mcp-evals "
                           "import-runs`) makes one")
    try:
        con = duckdb.connect(str(path), read_only=True,
                             config={"enable_external_access": False, "lock_configuration": True})
    except duckdb.Error as exc:
        raise QueryRefused(f"the results database {path} cannot be opened read-only now ({exc}); try again") from exc
    try:
        yield con
    finally:
        con.close()


def _walk(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


def refusal(sql: str) -> str | None:
    """Why `sql` may not run (None: it may): anything but exactly one SELECT, a table function that may read a
    file, a file named as a table. DuckDB's own parser decides, never a pattern over the text."""
    parser = duckdb.connect(":memory:")
    try:
        try:
            statements = parser.extract_statements(sql)
        except duckdb.Error as exc:
            return f"the query does not parse: {exc}"
        if len(statements) != 1:
            return (f"one statement only, got {len(statements)}" if statements else "the query is empty")
        kind = statements[0].type.name
        if kind != "SELECT":
            return f"only a SELECT (or WITH ... SELECT) is answered: this statement is {kind}, which is refused"
        tree = json.loads(parser.execute("SELECT json_serialize_sql(?)", [sql]).fetchone()[0])
    finally:
        parser.close()
    if tree.get("error"):
        return f"the query does not parse: {tree.get('error_message')}"
    for node in _walk(tree["statements"]):
        if node.get("type") == "TABLE_FUNCTION":
            name = str(node.get("function", {}).get("function_name", "?"))
            if name.lower() not in ALLOWED_TABLE_FUNCTIONS:
                return (f"table function {name}() is refused: it may read files or settings (allowed: "
                        f"{', '.join(sorted(ALLOWED_TABLE_FUNCTIONS))})")
        elif node.get("type") == "BASE_TABLE" and any(c in str(node.get("table_name", "")) for c in "/\\."):
            return f"{node['table_name']!r} names a file, not a table of the store: files are never read"
    return None


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return str(value)


def run_query(sql: str, max_rows: int = DEFAULT_MAX_ROWS, timeout_s: float = DEFAULT_TIMEOUT_S,
              db: Path | None = None, params: list[object] | None = None) -> QueryResult:
    """The first `max_rows` rows of one SELECT over the store, stopped after `timeout_s` seconds."""
    if not 1 <= max_rows <= MAX_MAX_ROWS:
        raise QueryRefused(f"max_rows must be between 1 and {MAX_MAX_ROWS}, got {max_rows}")
    if not 0 < timeout_s <= MAX_TIMEOUT_S:
        raise QueryRefused(f"timeout_seconds must be above 0 and at most {MAX_TIMEOUT_S}, got {timeout_s}")
    if (why := refusal(sql)) is not None:
        raise QueryRefused(why)
    with read_only_connection(db) as con:
        outcome: dict[str, Any] = {}

        def work() -> None:
            try:
                cursor = con.execute(sql, params or [])
                outcome["columns"] = [d[0] for d in cursor.description or []]
                outcome["rows"] = cursor.fetchmany(max_rows + 1)  # one more than the cap: was it hit?
            except BaseException as exc:  # handed to the caller's thread
                outcome["error"] = exc

        worker = threading.Thread(target=work, name="query_results", daemon=True)
        worker.start()
        worker.join(timeout_s)
        if worker.is_alive():
            con.interrupt()
            worker.join(INTERRUPT_GRACE_S)  # an interrupted query ends at once; never wait unbounded on one
            raise QueryRefused(f"the query was stopped after {timeout_s:g} s (its time limit; narrow it, or raise "
                               f"timeout_seconds up to {MAX_TIMEOUT_S:g})")
    if "error" in outcome:
        error = outcome["error"]
        if isinstance(error, duckdb.Error):
            raise QueryRefused(f"the query failed: {error}") from error
        raise error
    rows = [[_jsonable(v) for v in row] for row in outcome["rows"]]
    truncated = len(rows) > max_rows
    rows = rows[:max_rows]
    note = (f"truncated: only the first {max_rows} rows are returned (the cap); add LIMIT / WHERE or raise max_rows"
            if truncated else f"{len(rows)} row(s), all of them")
    return QueryResult(columns=outcome["columns"], rows=rows, row_count=len(rows), truncated=truncated, note=note)
