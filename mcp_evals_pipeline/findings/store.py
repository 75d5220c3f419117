"""Findings on disk and in DuckDB. The files (eval_results/findings/F-0001.json, one per finding, written
atomically) are the source of truth; the `findings` and `finding_history` tables are rebuilt from them whole, like
every other table is an index of files. Ids are never reused: a finding's file is never deleted (a human close is
recorded in it)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import duckdb
from pydantic import ValidationError

from mcp_evals_pipeline.findings.contract import FINDING_ID, Finding
from mcp_evals_pipeline.paths import findings_dir


class FindingsError(Exception):
    """A findings file that cannot be read (named with its field), or an id that does not exist."""


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "(the file)"
    return f"field {where}: {err['msg']}"


def load_finding(path: Path) -> Finding:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FindingsError(f"{path}: not a readable findings file ({exc})") from exc
    try:
        finding = Finding.model_validate(data)
    except ValidationError as exc:
        raise FindingsError(f"{path}: {_first_error(exc)}") from exc
    if path.stem != finding.id:
        raise FindingsError(f"{path}: field id: {finding.id!r} does not match the file name {path.name}")
    return finding


class FindingsStore:
    def __init__(self, directory: Path | None = None):
        self.dir = Path(directory) if directory else findings_dir()

    def load(self) -> list[Finding]:
        """Every finding, by id. One malformed file fails the whole load (naming the file and field): a status
        decided without it could re-create it under a new id."""
        if not self.dir.is_dir():
            return []
        return sorted((load_finding(p) for p in self.dir.glob("*.json")), key=lambda f: _number(f.id))

    def next_id(self, findings: list[Finding]) -> str:
        """One past the highest id ever written: files are never deleted, so no id comes back."""
        on_disk = [p.stem for p in self.dir.glob("F-*.json")] if self.dir.is_dir() else []
        taken = [_number(f.id) for f in findings] + [_number(s) for s in on_disk if FINDING_ID.fullmatch(s)]
        return f"F-{max(taken, default=0) + 1:04d}"

    def write(self, finding: Finding) -> Path:
        """Atomically: a reader sees the old file or the new one, never half of one."""
        self.dir.mkdir(parents=True, exist_ok=True)
        target = self.dir / f"{finding.id}.json"
        fd, tmp = tempfile.mkstemp(prefix=f".{finding.id}-", suffix=".json", dir=self.dir)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(finding.model_dump_json(indent=2) + "\n")
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return target

    def get(self, finding_id: str) -> Finding:
        from mcp_evals_pipeline.did_you_mean import suggestion

        findings = self.load()
        found = next((f for f in findings if f.id == finding_id), None)
        if found is None:
            raise FindingsError(f"no finding {finding_id!r} under {self.dir}"
                                f"{suggestion(finding_id, [f.id for f in findings])}")
        return found


def _number(finding_id: str) -> int:
    return int(finding_id.split("-", 1)[1])


INDEX_SCHEMA = """
CREATE OR REPLACE TABLE findings (
    id VARCHAR PRIMARY KEY, title VARCHAR, category VARCHAR, status VARCHAR, first_seen DATE, last_seen DATE,
    closed BOOLEAN, signature JSON, evidence JSON, closes JSON
);
CREATE OR REPLACE TABLE finding_history (
    id VARCHAR, week DATE, status VARCHAR, matching_trials INTEGER, clean_batches INTEGER, trials JSON
);
"""


def index_findings(con: duckdb.DuckDBPyConnection, findings: list[Finding]) -> None:
    """Replace both tables with what the files say."""
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute(INDEX_SCHEMA)
        if findings:
            con.executemany("INSERT INTO findings VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", [
                (f.id, f.title, f.category, f.status, f.first_seen, f.last_seen, f.closed,
                 f.signature.model_dump_json(), json.dumps([q.model_dump(mode="json") for q in f.evidence]),
                 json.dumps([c.model_dump(mode="json") for c in f.closes])) for f in findings])
        rows = [(f.id, h.week, h.status, len(h.matching_trials), h.clean_batches, json.dumps(h.matching_trials))
                for f in findings for h in f.history]
        if rows:
            con.executemany("INSERT INTO finding_history VALUES (?, ?, ?, ?, ?, ?)", rows)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
