"""`mcp-evals publish --to DIR`: the compact copy of the results a CI job pushes to its results branch (the spec's
"eval-results branch layout"):

    runs/<runId>/run.json                the run and every current trial record (grades, checks, perf, versions)
    runs/<runId>/report.md               the scorecard
    runs/<runId>/trials/<key>/memo.md    the judge's memos
    synthesis/<date>.md                  the weekly syntheses

No workspace snapshots, transcripts or pictures, and every text passes the one redaction step (redaction.py): a
secret the harness holds never leaves in a published file. Append-only: a run already published with the same
bytes is left alone; one published with different bytes is never overwritten (reported as a conflict), so a
results branch only grows. `import-runs DIR` and `synthesize --results-dir DIR` read the layout back."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from mcp_evals_pipeline.ids import check_id
from mcp_evals_pipeline.redaction import redact, secret_values
from mcp_evals_pipeline.runs import RUN_FILE, load_run_file
from mcp_evals_pipeline.trial_dir import MEMO_FILE, run_file

REPORT_FILE = "report.md"


@dataclass
class PublishSummary:
    published: list[str] = field(default_factory=list)  # run ids (and synthesis/<date>.md) written now
    unchanged: list[str] = field(default_factory=list)  # already there with the same bytes
    conflicts: list[str] = field(default_factory=list)  # already there with other bytes: left as they were
    skipped: list[str] = field(default_factory=list)  # "<run dir>: why" (no run.json, unreadable)


def _run_files(run_dir: Path, secrets: dict[str, str]) -> dict[str, bytes]:
    """What a run publishes, relative to its directory: run.json (records without transcript paths: transcripts
    stay home), report.md and the memos, each redacted."""
    run = load_run_file(run_dir / RUN_FILE)
    memos = {t.trial_name: run_file(run_dir, t.memo_path) for t in run.trials}
    trials = [t.model_copy(update={"transcript_path": None,
                                   "memo_path": f"trials/{t.trial_name}/{MEMO_FILE}" if memos[t.trial_name] else None})
              for t in run.trials]
    run = run.model_copy(update={"trials": trials})
    files = {RUN_FILE: redact(run.model_dump_json(indent=2), secrets) or ""}
    if (run_dir / REPORT_FILE).is_file():
        files[REPORT_FILE] = redact((run_dir / REPORT_FILE).read_text(encoding="utf-8"), secrets) or ""
    for key, memo in memos.items():
        if memo is not None:
            files[f"trials/{key}/{MEMO_FILE}"] = redact(memo.read_text(encoding="utf-8"), secrets) or ""
    return {name: text.encode() for name, text in files.items()}


def _same(dest: Path, files: dict[str, bytes]) -> bool:
    present = {p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()}
    return present == set(files) and all((dest / name).read_bytes() == data for name, data in files.items())


def _write_new(dest: Path, files: dict[str, bytes]) -> None:
    """All of a run's files appear at once (a temporary directory renamed into place): a reader never sees half."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent))
    try:
        for name, data in files.items():
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp / name).write_bytes(data)
        tmp.rename(dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def publish(runs_root: Path, synthesis_root: Path, to: Path, run_ids: list[str] | None = None) -> PublishSummary:
    """Publish every run under `runs_root` (or only `run_ids`) and every synthesis under `synthesis_root`."""
    secrets = secret_values()
    summary = PublishSummary()
    wanted = {check_id(r, "run id") for r in run_ids} if run_ids else None
    for run_dir in sorted(p for p in runs_root.iterdir() if p.is_dir()) if runs_root.is_dir() else []:
        if wanted is not None and run_dir.name not in wanted:
            continue
        try:
            files = _run_files(run_dir, secrets)
        except (OSError, ValueError) as exc:
            summary.skipped.append(f"{run_dir}: {' '.join(str(exc).split())[:300]}")
            continue
        dest = to / "runs" / run_dir.name
        if not dest.exists():
            _write_new(dest, files)
            summary.published.append(run_dir.name)
        elif _same(dest, files):
            summary.unchanged.append(run_dir.name)
        else:
            summary.conflicts.append(run_dir.name)
    for missing in sorted((wanted or set()) - {p.name for p in runs_root.glob("*")}):
        summary.skipped.append(f"{runs_root / missing}: no such run")
    for report in sorted(synthesis_root.glob("*.md")) if synthesis_root.is_dir() else []:
        data = (redact(report.read_text(encoding="utf-8"), secrets) or "").encode()
        dest = to / "synthesis" / report.name
        name = f"synthesis/{report.name}"
        if not dest.exists():
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
            summary.published.append(name)
        elif dest.read_bytes() == data:
            summary.unchanged.append(name)
        else:
            summary.conflicts.append(name)
    return summary
