"""Versions that every record carries. Bump GRADER_VERSION whenever grading semantics change, so trend readers
know that a comparison crosses a version boundary."""

GRADER_VERSION = "1.0.0"
