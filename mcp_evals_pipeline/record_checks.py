"""The checks every record read from outside passes before anything is written: a run.json to import
(`import-runs`), a CI shard to merge (`merge-shards`), a QA file to turn into cases (`import-qa`).

Such a file parses and still may not be one our harness wrote: a number DuckDB cannot hold (`1e40` in an integer
column, `Infinity`), an id that would become a path out of the results root (`../../x`), a date DuckDB cannot
read, or a size no real record has. Each of these used to surface as a traceback halfway through, after trial
directories were written; here each is a `RecordError` naming the file and the field (its JSON path), raised while
nothing is written yet. The commands turn it into one line and exit 2.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path

import duckdb
from pydantic import BaseModel

from mcp_evals_pipeline.contracts.records import RunFile
from mcp_evals_pipeline.ids import check_id
from mcp_evals_pipeline.store import SCHEMA

# No real record comes near these: a 500-trial batch's run.json is ~2 MB, a memo or scorecard a few KB, a QA file
# (seed 003) a few dozen pairs. They stop a file that would fill the disk or the database.
MAX_RECORD_BYTES = 32 * 1024 * 1024  # a run.json (imported, merged, or rebuilt from)
MAX_TEXT_BYTES = 4 * 1024 * 1024  # memo.md, report.md copied beside a record
MAX_QA_BYTES = 2 * 1024 * 1024
MAX_QA_PAIRS = 500

# The integer columns of the store (store.SCHEMA) are 32-bit; every other integer lands in a BIGINT or in JSON.
_INT32_FIELDS = frozenset(re.findall(r"\b(\w+) INTEGER\b", SCHEMA))
_INT32, _INT64 = 2**31 - 1, 2**63 - 1
# Fields that become path parts or partition keys (trial directories are <task>--<condition>--t<N>).
_ID_FIELDS = ("run_id", "batch_id", "task", "condition")
# Fields DuckDB casts: what it cannot read fails the insert.
_DATE_FIELDS = {"batch_date": "DATE", "timestamp": "TIMESTAMPTZ", "started_at": "TIMESTAMPTZ"}


class RecordError(ValueError):
    """A record from outside that would not be written: names the file and the field."""

    def __init__(self, source: Path | str, field: str, message: str):
        self.source, self.field, self.message = str(source), field, message
        super().__init__(f"{source}: {field}: {message}" if field else f"{source}: {message}")


def read_capped(path: Path, limit: int) -> bytes:
    """The bytes of a regular file of at most `limit` bytes (a link, a FIFO or a device is refused, unread)."""
    if path.is_symlink() or not path.is_file():
        raise RecordError(path, "", "not a regular file")
    with path.open("rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise RecordError(path, "", f"larger than {limit:,} bytes")
    return data


def check_text_file(path: Path, inside: Path) -> None:
    """A text file copied beside a record (a memo, a scorecard): a regular file inside `inside` (no link, neither
    of the file nor of a directory on its way) within MAX_TEXT_BYTES."""
    if path.is_symlink() or not path.is_file():
        raise RecordError(path, "", "not a regular file (a link or a special file is never copied)")
    if not path.resolve().is_relative_to(inside.resolve()):
        raise RecordError(path, "", f"reached through a link out of {inside}")
    if path.stat().st_size > MAX_TEXT_BYTES:
        raise RecordError(path, "", f"larger than {MAX_TEXT_BYTES:,} bytes")


def _alias(model: BaseModel, name: str) -> str:
    info = type(model).model_fields[name]
    return info.serialization_alias or info.alias or name


def _walk(value: object, path: str, name: str, problems: list[tuple[str, str]],
          dates: list[tuple[str, str, str]]) -> None:
    """Every number finite and within its column's range, every id plain, every date collected for DuckDB."""
    if isinstance(value, BaseModel):
        for field in type(value).model_fields:
            child = getattr(value, field)
            _walk(child, f"{path}.{_alias(value, field)}" if path else _alias(value, field), field, problems, dates)
    elif isinstance(value, dict):
        for key, child in value.items():
            _walk(child, f"{path}.{key}", "", problems, dates)
    elif isinstance(value, list):
        for index, child in enumerate(value):
            _walk(child, f"{path}[{index}]", "", problems, dates)
    elif isinstance(value, bool):
        return
    elif isinstance(value, int):
        bound = _INT32 if name in _INT32_FIELDS else _INT64
        if not -bound - 1 <= value <= bound:
            text = str(value) if len(str(value)) < 30 else f"{str(value)[:12]}...({len(str(value))} digits)"
            problems.append((path, f"{text} is outside the {32 if bound == _INT32 else 64}-bit integer range"))
    elif isinstance(value, float):
        if not math.isfinite(value):
            problems.append((path, f"{value} is not a finite number"))
    elif isinstance(value, str):
        if name in _ID_FIELDS:
            try:
                check_id(value, name)
            except ValueError as exc:
                problems.append((path, str(exc)))
        elif name in _DATE_FIELDS:
            dates.append((path, value, _DATE_FIELDS[name]))


def _unreadable(dates: list[tuple[str, str, str]]) -> set[int]:
    """The indexes of the dates DuckDB itself cannot cast to their column's type: asked of DuckDB, in one query
    per type."""
    bad: set[int] = set()
    # A connection per call (~0.03 s), never one kept open: with a DuckDB left open in the process, a later fork's
    # child (a sandboxed command's, before its exec) died of SIGSEGV.
    with duckdb.connect(":memory:") as con:
        for sql_type in sorted({t for _, _, t in dates}):
            indexes = [i for i, (_, _, t) in enumerate(dates) if t == sql_type]
            (unread,) = con.execute(f"SELECT list_transform(?::VARCHAR[], lambda v: try_cast(v AS {sql_type}) IS NULL)",
                                    [[dates[i][1] for i in indexes]]).fetchone()
            bad |= {i for i, failed in zip(indexes, unread, strict=True) if failed}
    return bad


def check_records(items: Sequence[tuple[BaseModel, Path | str]]) -> None:
    """RecordError for the first field, of the first record in order (a RunFile, a TrialRecord), that could not be
    written as is. The dates of all of them are asked of DuckDB at once: an import of 259 runs opens one
    connection, not 259."""
    walked: list[tuple[Path | str, list[tuple[str, str]], list[tuple[str, str, str]]]] = []
    for record, source in items:
        problems: list[tuple[str, str]] = []
        dates: list[tuple[str, str, str]] = []
        _walk(record, "", "", problems, dates)
        walked.append((source, problems, dates))
    every = [date for _, _, dates in walked for date in dates]
    bad = _unreadable(every) if every else set()
    offset = 0
    for source, problems, dates in walked:
        problems += [(path, f"{value[:40]!r} is not a {sql_type} DuckDB can read")
                     for i, (path, value, sql_type) in enumerate(dates, offset) if i in bad]
        offset += len(dates)
        if problems:
            field, message = problems[0]
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            raise RecordError(source, field, message + more)


def check_record(record: BaseModel, source: Path | str) -> None:
    """RecordError for the first field of `record` (a RunFile, a TrialRecord) that could not be written as is."""
    check_records([(record, source)])


def check_run(run: RunFile, source: Path | str) -> RunFile:
    check_record(run, source)
    return run
