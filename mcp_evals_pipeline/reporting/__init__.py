"""Rendering of results for people: the per-run scorecard (report.md)."""
