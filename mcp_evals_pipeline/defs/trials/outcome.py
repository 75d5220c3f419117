"""What a trial's materialization tells the UI by itself: its outcome (a tag and metadata), the grading checks as a
table with the failing check first, the paths of its folder, transcript and memo, and the result of the
per-partition `trial_outcome` check.

Why a partitioned asset check for "which failed": Dagster 1.13's asset partition view colours a partition by its
materialization only (materialized / failed to materialize / missing), and a graded failure is a successful
materialization: failing the run instead would leave no materialization, so no metadata, and make the CLI report a
broken run for an ordinary fail. A check partitioned like the asset (AssetCheckSpec.partitions_def, which the
webserver's check page draws as a partition bar of succeeded / failed partitions) shows each failed or invalid
trial partition as failed, beside its green materialization."""

from __future__ import annotations

import warnings
from pathlib import Path

import dagster as dg

from mcp_evals_pipeline.contracts.records import TrialRecord
from mcp_evals_pipeline.defs.partitions import trial_partitions
from mcp_evals_pipeline.trial_dir import TrialDir, run_file

OUTCOME_TAG = "mcp-evals/outcome"  # pass | fail | invalid, on every trial materialization
OUTCOME_CHECK = "trial_outcome"
DETAIL_CHARS = 300  # one check's detail in the table: the full text is in trial.json

with warnings.catch_warnings():  # partitioned checks are a "preview" in 1.13: said once here, not on every defs load
    warnings.simplefilter("ignore", dg.PreviewWarning)
    outcome_check_spec = dg.AssetCheckSpec(
        OUTCOME_CHECK, asset="trial", partitions_def=trial_partitions,
        description="Per trial partition: passes when the trial passed its contract; fails (WARN) when it failed, "
                    "(ERROR) when it is invalid. The failing check and the outcome are in its metadata.")


def outcome_of(record: TrialRecord) -> str:
    return "pass" if record.grade.contract_pass else ("invalid" if not record.valid else "fail")


def checks_table(record: TrialRecord) -> dg.TableMetadataValue:
    """The grading checks (id, pass, detail): the first failing required check first, then the other failing
    ones, then the passes, each group in the grader's order."""
    first = record.grade.first_failure
    ordered = sorted(record.grade.checks, key=lambda c: 0 if c is first else (1 if not c.passed else 2))
    return dg.MetadataValue.table(
        records=[dg.TableRecord({"id": c.id, "pass": c.passed,
                                 "detail": " ".join((c.detail or "").split())[:DETAIL_CHARS]}) for c in ordered],
        schema=dg.TableSchema(columns=[dg.TableColumn("id", "string"), dg.TableColumn("pass", "bool"),
                                       dg.TableColumn("detail", "string")]))


def file_paths(record: TrialRecord, trial_dir: TrialDir) -> dict[str, dg.MetadataValue]:
    """The trial's folder, and its transcript and memo where they exist (a record names them relative to its run
    directory)."""
    run_dir = trial_dir.path.parent.parent
    found: dict[str, Path | None] = {"trial_folder": trial_dir.path,
                                     "transcript": run_file(run_dir, record.transcript_path),
                                     "memo": run_file(run_dir, record.memo_path)}
    return {name: dg.MetadataValue.path(str(path)) for name, path in found.items() if path is not None}


def outcome_check(record: TrialRecord) -> dg.AssetCheckResult:
    outcome = outcome_of(record)
    first = record.grade.first_failure
    return dg.AssetCheckResult(
        check_name=OUTCOME_CHECK, passed=outcome == "pass",
        severity=dg.AssetCheckSeverity.ERROR if outcome == "invalid" else dg.AssetCheckSeverity.WARN,
        metadata={"outcome": outcome, "failure_code": record.grade.failure_code or "",
                  "failing_check": dg.MetadataValue.text(f"{first.id}: {first.detail}" if first else "")})
