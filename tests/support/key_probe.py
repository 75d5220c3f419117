"""A shell command an agent runs to look for its model key where its own commands could read it: the environment
of every process above it (the CLI's included, through /proc) and every file in the CLI runner's private directory
(CODEX_HOME's or CLAUDE_CONFIG_DIR's: HOME, the CLI's config, its launcher and env files).
It prints the two counts as `key-probe env=<n> files=<n>`. The key is assembled at run time, so the command text
(which the CLI logs into its own session files) never holds it."""

from __future__ import annotations

import shlex


def key_probe(key: str) -> str:
    head, tail = key[: len(key) // 2], key[len(key) // 2:]
    return (
        f"k={shlex.quote(head)}; k=\"$k\"{shlex.quote(tail)}; "
        "env_hits=$(p=$$; while [ \"$p\" -gt 1 ] 2>/dev/null; do cat /proc/$p/environ 2>/dev/null; echo; "
        "p=$(sed 's/.*) //' /proc/$p/stat 2>/dev/null | cut -d' ' -f2); done | tr '\\0' '\\n' | grep -cF \"$k\"); "
        "if [ -n \"$CODEX_HOME\" ]; then d=\"$CODEX_HOME/..\"; elif [ -n \"$CLAUDE_CONFIG_DIR\" ]; "
        "then d=\"$CLAUDE_CONFIG_DIR/../..\"; else d=\"$HOME\"; fi; "
        "file_hits=$(grep -rlF \"$k\" \"$d\" 2>/dev/null | wc -l); "
        "echo \"key-probe env=$env_hits files=$file_hits\""
    )


CLEAN = "key-probe env=0 files=0"
