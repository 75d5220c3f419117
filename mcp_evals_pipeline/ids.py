"""The one check for ids that become file or directory names: batch ids, run ids, task ids, trial keys.

An id is a plain name: letters and digits, then also `. _ + = @ , : -`. No path separator, so no `..` either, nothing
that starts with a dot or a dash, at most 200 characters. Every place an id from the outside (a command-line option,
a run config, a run.json, a database row) turns into a path checks it here, so none can climb out of the results
root or hide from `rebuild-db`.
"""

from __future__ import annotations

import re

MAX_ID_LENGTH = 200
_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+=@,:-]*")


def check_id(value: object, what: str) -> str:
    """`value` if it is a plain name, else ValueError naming `what` and the rule."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what} must be a non-empty string, got {value!r}")
    if len(value) > MAX_ID_LENGTH:
        raise ValueError(f"{what} {value[:40]!r}... is longer than {MAX_ID_LENGTH} characters")
    if not _PLAIN.fullmatch(value):
        raise ValueError(f"{what} {value!r} is not a plain name (letters, digits and . _ + = @ , : - only, "
                         "starting with a letter or digit; it becomes a directory name)")
    return value
