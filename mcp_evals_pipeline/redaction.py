"""One redaction step for everything a record says in words: check details, errors, server output.

The boxes keep host files and the harness's environment out of agent-written code's reach; this is the second
line: whatever text reaches a record (an installer echoing a line, a server printing what it was given) has the
value of every secret the harness holds replaced by `[redacted:NAME]`. Secrets are the environment variables whose
name says so (key, token, secret, password, credential, webhook, auth...), every variable set in the checkout's
`.env`, and any name listed in MCP_EVALS_SECRET_VARS (comma separated).
"""

from __future__ import annotations

import os
import re

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
