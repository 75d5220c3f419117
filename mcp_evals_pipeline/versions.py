"""Versions that every record carries. Bump GRADER_VERSION whenever grading semantics change, so trend readers
know that a comparison crosses a version boundary."""

# 1.1.0: grading works on a copy of the workspace (links leaving it dropped), installs and tsc run in boxes with
# private download caches, requirement includes outside the workspace are refused, the server runs as nobody.
GRADER_VERSION = "1.1.0"
