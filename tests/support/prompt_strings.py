"""Is a string a contract checks stated by the prompt? Verbatim, or as an instance of a template the prompt pins.

A prompt states the wording ("The message is `Confirm target: <service> in <environment>`"); the contract may probe
it with inputs the prompt never lists ("Confirm target: payments in eu-west"). A template is a backticked span with
`<placeholder>`s; each placeholder stands for any non-empty text, everything else must match exactly."""

from __future__ import annotations

import re

_SPAN = re.compile(r"`([^`\n]*<[A-Za-z_][\w -]*>[^`\n]*)`")
_PLACEHOLDER = re.compile(r"<[A-Za-z_][\w -]*>")


def templates(prompt: str) -> list[re.Pattern[str]]:
    out = []
    for span in _SPAN.findall(prompt):
        parts = _PLACEHOLDER.split(span)
        out.append(re.compile("(?:.+?)".join(re.escape(p) for p in parts), re.DOTALL))
    return out


def unstated(strings: list[str], prompt: str) -> list[str]:
    """The strings the prompt neither states verbatim nor pins by a template (a template may match the string, or
    a part of it)."""
    pinned = templates(prompt)
    return [s for s in strings if s not in prompt and not any(t.search(s) for t in pinned)]
