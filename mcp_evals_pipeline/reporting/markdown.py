"""Untrusted text made inert before a report or the UI quotes it: one helper for every place that does.

What an agent writes (its reply, the requests it sent, the server it built and what that server answers, a judge's
memo about it) reaches report.md, the weekly synthesis and compare's tables. Rendered as markdown it could open a
`<script>`, link to `javascript:`, break a table with `|` or start a heading of its own. Quoted through md_text it
reads the same and renders as the text it is: one line, HTML escaped, every markdown construct that can change
what the page does or how it is laid out backslash-escaped. md_code quotes it as a code span it cannot leave.
"""

from __future__ import annotations

import re

# Inline constructs that can change what a page does or its layout: HTML (a tag or an autolink opens with `<`;
# `&` so an entity shows as written), links, images and reference definitions ([ ]), code spans (`), table cells
# (|), and the escape character itself. `>` and `*`/`_` emphasis cannot do either mid-line and stay readable.
_INLINE = {"\\": "\\\\", "`": "\\`", "[": "\\[", "]": "\\]", "|": "\\|", "<": "&lt;", "&": "&amp;"}
_INLINE_RE = re.compile("[" + re.escape("".join(_INLINE)) + "]")
# What opens a block when a line starts with it: a heading, a quote, a list item, a fence. (Every caller puts the
# text after a prefix of its own, so this is the second line of defence; a lone "-" stays as it is: it is how a
# table says "none".)
_BLOCK_START = re.compile(r"^(\s*)(\d+(?=[.)](?:\s|$))|)([.)](?=\s|$)|#(?=#*(?:\s|$))|[-+*](?=\s)|[>~])")
# A code span (CommonMark: a run of backticks, not escaped, closed by the next run of the same length).
_CODE_SPAN = re.compile(r"(?<![`\\])(`+)(?!`)(.*?[^`])\1(?!`)")


def one_line(text: object, limit: int | None = None) -> str:
    """Whitespace (newlines included) collapsed to single spaces, cut at `limit` characters with an ellipsis."""
    line = " ".join(str(text).split())
    if limit is not None and len(line) > limit:
        line = line[: limit - 1] + "…"
    return line


def _inline(text: str) -> str:
    return _INLINE_RE.sub(lambda m: _INLINE[m.group()], text)


def _no_block_start(line: str) -> str:
    """A line that cannot open a block (its first marker backslash-escaped), wherever a caller puts it."""
    return _BLOCK_START.sub(lambda m: f"{m.group(1)}{m.group(2)}\\{m.group(3)}", line, count=1)


def md_text(text: object, limit: int | None = None) -> str:
    """Untrusted text as one line of inert markdown (its cut, if any, made before escaping: no escape is split)."""
    return _no_block_start(_inline(one_line(text, limit)))


def md_prose(text: object, limit: int | None = None) -> str:
    """As md_text, but the text's own closed code spans stay code spans (inside one nothing is markup): for prose
    written by a model about agent text (a judge's memo), whose `file.py` spans are part of how it reads."""
    line = one_line(text, limit)
    parts, pos = [], 0
    for span in _CODE_SPAN.finditer(line):
        parts += [_inline(line[pos:span.start()]), span.group(0)]
        pos = span.end()
    return _no_block_start("".join([*parts, _inline(line[pos:])]))


def md_code(text: object, limit: int | None = None, *, in_table: bool = False) -> str:
    """Untrusted text as one code span: delimited by more backticks than any run inside it, so it cannot close the
    span; in a table `|` escaped too (a GFM table splits cells even inside a code span)."""
    line = one_line(text, limit)
    line = line.replace("|", "\\|") if in_table else line
    longest = max((len(run) for run in re.findall(r"`+", line)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if line.startswith("`") or line.endswith("`") else ""
    return f"{fence}{pad}{line}{pad}{fence}"


# A link or image destination, inline or in a reference definition, that is not a web or relative address.
_INLINE_LINK = re.compile(r"\]\((?!\s*(?:https?://|#|/|\.{0,2}/|[\w.-]+(?:/|\)|$)))")
_REFERENCE = re.compile(r"^(\s{0,3})\[([^\]]*)\]:(?!\s*(?:https?://|#|/|\.{0,2}/))", re.MULTILINE)


def md_block(text: str) -> str:
    """Markdown written by a model from agent text (the synthesis): kept as markdown (its headings, lists and
    emphasis are the point) but without raw HTML (every `<` escaped: no tag, no autolink) and without a link to
    anything but a web or relative address (a `javascript:` or `data:` link is left as text)."""
    text = text.replace("&", "&amp;").replace("<", "&lt;")
    text = _INLINE_LINK.sub(r"]\\(", text)
    return _REFERENCE.sub(lambda m: f"{m.group(1)}\\[{m.group(2)}]:", text)
