"""Findings that persist: a recurring struggle with a stable id (F-0001, never reused), tied to what code observes
in the trial rows (build: task, failure code, failing check; usage: case and mark), with verified evidence quotes,
a status per synthesis week decided by code, and the human closes kept for good.

contract.py (what a finding and a model's proposal are), signature.py (what a week's trials show), status.py (a
week's status, by code), store.py (the files, the source of truth, and their DuckDB index), weekly.py (one
synthesis week: proposals checked, findings created, statuses decided). docs/findings.md describes them."""
