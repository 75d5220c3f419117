"""One redaction step for everything a record says in words: check details, errors, server output, and every file
a trial leaves (transcript, workspace snapshot, logs: `redact_tree`).

The boxes keep host files and the harness's environment out of agent-written code's reach; this is the second
line: whatever text reaches a record (an installer echoing a line, a server printing what it was given) has the
value of every secret the harness holds replaced by `[redacted:NAME]`. Secrets are the environment variables whose
name says so (key, token, secret, password, credential, webhook, auth...), every variable set in the checkout's
`.env`, and any name listed in MCP_EVALS_SECRET_VARS (comma separated).
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
from pathlib import Path
from typing import BinaryIO

from dotenv import dotenv_values

from mcp_evals_pipeline.paths import REPO_ROOT

SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|WEBHOOK|AUTH|PRIVATE|COOKIE|SESSION", re.IGNORECASE)
EXTRA_ENV = "MCP_EVALS_SECRET_VARS"
# Shorter values would redact ordinary words; no real key is this short.
MIN_LENGTH = 8


def secret_values() -> dict[str, str]:
    """value -> variable name, for every secret the harness holds now (longest values first)."""
    listed = {n.strip() for n in os.environ.get(EXTRA_ENV, "").split(",") if n.strip()}
    dotenv = {k: v for k, v in dotenv_values(REPO_ROOT / ".env").items() if v} if (REPO_ROOT / ".env").is_file() else {}
    found = {v: k for k, v in os.environ.items() if SECRET_NAME.search(k) or k in listed or k in dotenv}
    found.update({v: k for k, v in dotenv.items()})
    return dict(sorted(((v, k) for v, k in found.items() if len(v) >= MIN_LENGTH), key=lambda item: -len(item[0])))


def redact(text: str | None, secrets: dict[str, str] | None = None) -> str | None:
    if not text:
        return text
    for value, name in (secrets if secrets is not None else secret_values()).items():
        if value in text:
            text = text.replace(value, f"[redacted:{name}]")
    return text


# Files are read in chunks of this size; a secret that straddles two chunks is still found (see _redact_stream).
CHUNK = 1 << 20


def _pattern(secrets: dict[str, str]) -> tuple[re.Pattern[bytes], dict[bytes, bytes]] | None:
    """One alternation of every secret's bytes (longest first, as `redact` replaces them) and its replacement."""
    if not secrets:
        return None
    values = {value.encode(): f"[redacted:{name}]".encode() for value, name in secrets.items()}
    return re.compile(b"|".join(re.escape(v) for v in sorted(values, key=len, reverse=True))), values


def _redact_stream(src: BinaryIO, dst: BinaryIO | None, pattern: re.Pattern[bytes], values: dict[bytes, bytes]) -> int:
    """Copy src to dst with every secret replaced; returns how many were (dst None: only count them, stopping at
    the first). Chunked, so a multi-GB file or one huge line never sits in memory: the last (longest secret - 1)
    bytes of a chunk wait for the next one unless a match starting before them has already consumed them (a match
    that starts earlier is whole in the buffer)."""
    keep = max(len(v) for v in values) - 1
    pending = b""
    found = 0
    while True:
        chunk = src.read(CHUNK)
        data = pending + chunk
        boundary = len(data) if not chunk else len(data) - keep
        out, pos = [], 0
        for match in pattern.finditer(data):
            if match.start() >= boundary:
                break
            if dst is None:
                return 1
            out += [data[pos:match.start()], values[match.group()]]
            pos = match.end()
            found += 1
        cut = max(boundary, pos)
        out.append(data[pos:cut])
        if dst is not None:
            dst.write(b"".join(out))
        pending = data[cut:]
        if not chunk:
            return found


def redact_file(path: Path, secrets: dict[str, str] | None = None) -> int:
    """Redact one regular file in place (a new file renamed over it, mode kept: a hard link planted by an agent
    keeps pointing at the untouched original, never rewritten). Symlinks, FIFOs, sockets and devices are left
    alone, unopened. Returns how many secrets were replaced."""
    compiled = _pattern(secret_values() if secrets is None else secrets)
    if compiled is None:
        return 0
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return 0  # never opened: a FIFO would block, a device could act on being opened
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:  # swapped for a symlink (ELOOP), gone, unreadable: nothing of ours to read
        return 0
    with os.fdopen(fd, "rb") as src:
        st = os.fstat(src.fileno())
        if not stat.S_ISREG(st.st_mode) or not _redact_stream(src, None, *compiled):
            return 0  # read once; only a file that holds a secret is written again
        src.seek(0)
        # mkstemp creates exclusively: a name planted beside the file (a symlink out) is never written through.
        out_fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name[:64]}.", suffix=".redacting", dir=path.parent)
        tmp = Path(tmp_name)
        try:
            with os.fdopen(out_fd, "wb") as dst:
                found = _redact_stream(src, dst, *compiled)
            if found:
                os.chmod(tmp, stat.S_IMODE(st.st_mode))
                with contextlib.suppress(OSError):
                    os.chown(tmp, st.st_uid, st.st_gid)
                os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
    return found


def redact_tree(root: Path, secrets: dict[str, str] | None = None, skip: tuple[str, ...] = ()) -> dict[str, int]:
    """Redact every regular file under root (symlinked directories are not entered; top-level entries named in
    `skip` are left out). Returns {relative path: secrets replaced} for the files that held any (-1: a file that
    could not be rewritten, removed instead)."""
    secrets = secret_values() if secrets is None else secrets
    changed: dict[str, int] = {}
    if not secrets or not root.is_dir():
        return changed
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(dirpath)
        if here == root:
            dirnames[:] = [d for d in dirnames if d not in skip]
            filenames = [f for f in filenames if f not in skip]
        for name in filenames:
            path = here / name
            try:
                found = redact_file(path, secrets)
            except OSError:  # it holds a secret but cannot be rewritten (a full disk): removed, never kept as is
                with contextlib.suppress(OSError):
                    path.unlink()
                found = -1
            if found:
                changed[path.relative_to(root).as_posix()] = found
    return changed
