"""Whose failure a failed install step is: the harness's (`infra.install`, the trial is retried and leaves every
denominator) or the workspace's (`contract.install`, a failing solution).

Decided only on evidence the workspace's code cannot forge. An install step runs agent code (a build backend, a
`setup.py`, an npm lifecycle script) and its output is that code's to write: a script that prints "Connection
refused" and exits 1, or that forks a child holding the installer's output pipe until the step times out, would
otherwise turn a failing solution into a non-event and lift the pass rate. So a failure is infra only on:

- the egress proxy's own record of an upstream connection that failed during the step (sandbox/egress.py);
- the registry unreachable from the harness's own probe (made only when the output hints at network trouble: the
  text prompts the probe, it never decides);
- the harness's own timeout of a step during which no workspace code ran (creating an environment; installing a
  dependency set that names only registry packages). A timeout while workspace code ran is the workspace's.
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request

TIMEOUT_ENV = "MCP_EVALS_INSTALL_TIMEOUT_S"
DEFAULT_TIMEOUT_S = 600.0
PROBE_TIMEOUT_S = 10.0
PYPI = "https://pypi.org/simple/"
NPM_REGISTRY = "https://registry.npmjs.org/"


def install_timeout_s() -> float:
    """How long one install step may take (`MCP_EVALS_INSTALL_TIMEOUT_S`, default 600)."""
    raw = os.environ.get(TIMEOUT_ENV, "").strip()
    try:
        value = float(raw) if raw else DEFAULT_TIMEOUT_S
    except ValueError:
        raise ValueError(f"{TIMEOUT_ENV}={raw!r}: not a number of seconds") from None
    if not 0 < value <= 24 * 3600:
        raise ValueError(f"{TIMEOUT_ENV}={raw!r}: must be between 0 and 86400 seconds")
    return value


def python_index() -> str:
    """The index uv installs from: the host's setting, else PyPI."""
    for name in ("UV_DEFAULT_INDEX", "UV_INDEX_URL"):
        if os.environ.get(name, "").strip():
            return os.environ[name].strip()
    return PYPI


def npm_registry() -> str:
    for name in ("npm_config_registry", "NPM_CONFIG_REGISTRY"):
        if os.environ.get(name, "").strip():
            return os.environ[name].strip()
    return NPM_REGISTRY


def probe(url: str) -> str | None:
    """The harness's own request to a registry, from the host: None when it answers (any status below 500), else
    why not."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="GET"), timeout=PROBE_TIMEOUT_S) as answer:
            answer.read(1)
            return None
    except urllib.error.HTTPError as exc:
        return None if exc.code < 500 else f"HTTP {exc.code}"
    except (OSError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"


def judge(*, timed_out: bool, workspace_code: bool, unreachable: list[str], network_hint: bool,
          registry: str) -> tuple[bool, str]:
    """(infra, the evidence) for a failed install step.

    `workspace_code`: the step may have run the workspace's own code; `unreachable`: the egress proxy's record for
    the step; `network_hint`: the step's output mentions network trouble (forgeable: only ever a reason to probe)."""
    if unreachable:
        return True, "the egress proxy could not reach " + "; ".join(unreachable[:3])
    if timed_out and not workspace_code:
        return True, "the step ran no code of the workspace"
    if timed_out:
        return False, "the workspace's own code (a build backend or a lifecycle script) ran in this step"
    if network_hint:
        why = probe(registry)
        if why is not None:
            return True, f"the harness's own probe of {registry} failed ({why})"
        return False, (f"the output reports network trouble, but the egress proxy saw no failed connection and "
                       f"{registry} answers the harness's own probe")
    return False, ""


def note(infra: bool, evidence: str) -> str:
    """What a failure's message says of the verdict: " (infra: <evidence>)", " (not infra: ...)", or nothing."""
    return f" ({'infra' if infra else 'not infra'}: {evidence})" if evidence else ""
