"""The layout of a trial's directory, in one place: `<results>/runs/<runId>/trials/<key>/`.

    trial.json            the current attempt's record (written last: its presence means the attempt finished)
    transcript.jsonl      the agent's transcript          memo.md      the unscored judge memo
    server.log            what the graded server printed  workspace/   the agent's work, as it left it
    previous/attempt-<n>/ every earlier attempt's files, moved aside when the next one starts
    .space-reserve        ballast for as long as an attempt runs: deleted just before the record files are
                          written, so an agent (or anything else) that fills the disk cannot keep the trial from
                          landing its trial.json, memo and server.log
    .unindexed            beside a trial.json whose row could not be written: a retry re-indexes that record
                          instead of running the agent again
"""

from __future__ import annotations

import contextlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from mcp_evals_pipeline.contracts.records import TrialRecord

TRIAL_FILE = "trial.json"
TRANSCRIPT_FILE = "transcript.jsonl"
MEMO_FILE = "memo.md"
SERVER_LOG = "server.log"
PROXY_LOG = "proxy.log"  # what the recording proxy's HTTP server and MCP session logged (never the console)
RECORD_FILE = "mcp-calls.jsonl"  # a usage trial's MCP traffic as the recording proxy saw it
WORLD_FILE = "world.json"  # a usage trial's world: every request it received, and the server that ran
CONDITION_FILE = "condition.md"  # what a usage condition added to the prompt (the instructions, the docs pack)
WORKSPACE_DIR = "workspace"


def run_file(run_dir: Path, rel: str | None) -> Path | None:
    """A file a record names relative to its run directory (a memo, a transcript), if it is a regular file inside
    that directory. A run.json read from elsewhere (an import, a CI shard) may name `../../etc/passwd` or a link out:
    None then, so no host file is ever copied or quoted into a record or a report."""
    if not rel:
        return None
    root = run_dir.resolve()
    path = (root / rel).resolve()
    return path if path.is_relative_to(root) and path.is_file() else None
PREVIOUS_DIR = "previous"
RESERVE_FILE = ".space-reserve"
RESERVE_BYTES = 256 * 1024
UNINDEXED_MARKER = ".unindexed"


@dataclass(frozen=True)
class TrialDir:
    path: Path

    @property
    def key(self) -> str:
        return self.path.name

    @property
    def trial_file(self) -> Path:
        return self.path / TRIAL_FILE

    @property
    def workspace(self) -> Path:
        return self.path / WORKSPACE_DIR

    @property
    def transcript(self) -> Path:
        return self.path / TRANSCRIPT_FILE

    @property
    def memo(self) -> Path:
        return self.path / MEMO_FILE

    @property
    def server_log(self) -> Path:
        return self.path / SERVER_LOG

    @property
    def condition_brief(self) -> Path:
        return self.path / CONDITION_FILE

    @property
    def unindexed_marker(self) -> Path:
        return self.path / UNINDEXED_MARKER

    def rel(self, name: str) -> str:
        """A file of the trial as a record names it: relative to the run directory."""
        return f"trials/{self.key}/{name}"

    # Attempts -------------------------------------------------------------------------------------------------

    def earlier_attempts(self) -> list[int]:
        previous = self.path / PREVIOUS_DIR
        return sorted(int(p.name.split("-")[1]) for p in previous.glob("attempt-*")) if previous.is_dir() else []

    def earlier_records(self) -> list[TrialRecord]:
        return [TrialRecord.model_validate_json(p.read_text())
                for p in sorted(self.path.glob(f"{PREVIOUS_DIR}/attempt-*/{TRIAL_FILE}"))]

    def current_record(self) -> TrialRecord | None:
        """The current attempt as recorded, or None when there is none or it does not parse."""
        try:
            return TrialRecord.model_validate_json(self.trial_file.read_text())
        except (OSError, ValueError):
            return None

    def died_leftovers(self) -> list[Path]:
        """The files of an attempt whose process died before it wrote its record (none when it finished)."""
        if self.trial_file.exists() or not self.path.is_dir():
            return []
        return [c for c in self.path.iterdir() if c.name not in (PREVIOUS_DIR, RESERVE_FILE)]

    def archive_current(self) -> int:
        """Move the current attempt's files aside; returns the number of the attempt about to run."""
        self.unindexed_marker.unlink(missing_ok=True)  # the new attempt's write indexes the earlier ones
        done = self.earlier_attempts()
        if not self.trial_file.exists():
            if self.path.exists():  # leftovers without a record (a died attempt is recorded before this)
                for child in self.path.iterdir():
                    if child.name != PREVIOUS_DIR:
                        shutil.rmtree(child) if child.is_dir() else child.unlink()
            return (done[-1] + 1) if done else 1
        current = json.loads(self.trial_file.read_text()).get("attempt", 1)  # raw: an older record counts too
        target = self.path / PREVIOUS_DIR / f"attempt-{current}"
        target.mkdir(parents=True, exist_ok=True)
        for child in list(self.path.iterdir()):
            if child.name != PREVIOUS_DIR:
                shutil.move(str(child), target / child.name)
        return max([current, *done]) + 1

    # The disk -------------------------------------------------------------------------------------------------

    def reserve_space(self) -> None:
        with contextlib.suppress(OSError):  # a disk already full: the check after the agent phase reports it
            (self.path / RESERVE_FILE).write_bytes(b"\0" * RESERVE_BYTES)

    def release_reserve(self) -> None:
        (self.path / RESERVE_FILE).unlink(missing_ok=True)

    def disk_full(self) -> str | None:
        """A description when less than the reserve is left free where the trial's files live, else None."""
        try:
            free = shutil.disk_usage(self.path).free
        except OSError as exc:
            return f"sandbox disk unusable: {exc}"
        if free >= RESERVE_BYTES:
            return None
        return f"sandbox disk full: No space left on device ({free} bytes free under {self.path})"


def current_trials(run_dir: Path) -> list[TrialRecord]:
    """The current attempt of every trial of a run directory."""
    return [TrialRecord.model_validate_json(p.read_text()) for p in sorted(run_dir.glob(f"trials/*/{TRIAL_FILE}"))]


def read_trial_records(run_dir: Path) -> list[TrialRecord]:
    """Every attempt recorded under a run directory (current and previous), from its trial.json files."""
    return current_trials(run_dir) + [
        TrialRecord.model_validate_json(p.read_text())
        for p in sorted(run_dir.glob(f"trials/*/{PREVIOUS_DIR}/attempt-*/{TRIAL_FILE}"))]
