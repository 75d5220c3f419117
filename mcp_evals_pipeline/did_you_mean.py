""""Did you mean": the few known names nearest a misspelled one (a task, suite, condition, agent, batch or run id),
so an error names what the user most likely meant instead of every name there is."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

MAX_SUGGESTIONS = 3
# Near enough to offer (difflib's similarity ratio): "mcp-pythn" finds mcp-python (0.95), "replya" replay (0.83);
# "nope" finds nothing rather than the least unlike name (openai, 0.6).
CUTOFF = 0.7
# Only names about as near as the nearest: a one-letter typo names its task, not three look-alikes.
WITHIN = 0.05


def closest(word: str, known: Iterable[str], n: int = MAX_SUGGESTIONS) -> list[str]:
    """The known names nearest `word`, best first (letter case ignored); none when nothing is near."""
    by_folded: dict[str, str] = {}
    for name in known:
        by_folded.setdefault(name.casefold(), name)
    folded = word.casefold()
    matcher = difflib.SequenceMatcher(b=folded)
    scored = []
    for candidate in by_folded:
        matcher.set_seq1(candidate)
        if matcher.real_quick_ratio() >= CUTOFF and matcher.quick_ratio() >= CUTOFF and matcher.ratio() >= CUTOFF:
            scored.append((matcher.ratio(), candidate))
    scored.sort(key=lambda pair: (-pair[0], pair[1]))
    similar = [c for ratio, c in scored if ratio >= scored[0][0] - WITHIN] if scored else []
    # A part of a name (`v4-01-basic-tool-server`, `restart`) first names the names that hold it.
    holding = sorted(c for c in by_folded if folded in c) if len(folded) >= 3 else []
    return [by_folded[c] for c in dict.fromkeys([*holding, *similar])][:n]


def suggestion(word: str, known: Iterable[str]) -> str:
    """`; did you mean a, b or c?`, or nothing when no known name is near."""
    near = closest(word, known)
    if not near:
        return ""
    return "; did you mean " + (near[0] if len(near) == 1 else f"{', '.join(near[:-1])} or {near[-1]}") + "?"
