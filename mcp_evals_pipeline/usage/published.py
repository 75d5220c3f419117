"""A published server under evaluation (`server.package`): installed and run like the code the grader runs.

Third-party code is treated as the grader treats an agent's: its pinned package is installed by the runtime the
grader uses (grader/runtimes.py: an install box with the registry and nothing else of the host; environments and
node_modules sets cached per day like the graded workspaces'), from a declaration written here (requirements.txt
`name==version`, or package.json with the exact version), and the server runs in the graded servers' box
(sandbox/server_box.py: its runtime read-only, its run directory, HOME and TMPDIR writable, uid nobody, a sanitized
environment with no key of the harness). Like a graded server it has a network namespace of its own, relayed to
the host-loopback URLs of its environment only: point its API base URL at `{world}` in `server.env`.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from mcp_evals_pipeline import procs
from mcp_evals_pipeline.contracts.usage import UsageServer
from mcp_evals_pipeline.grader.runtimes import Installation, InstallError, runtime_for
from mcp_evals_pipeline.grader.scratch import Workdir, workdir_for


class PublishedServerError(Exception):
    """The published server could not be installed or boxed: nothing can be judged (infra)."""


@dataclass
class Installed:
    server: UsageServer
    work: Workdir
    installation: Installation

    def command(self, port: int | None, extra_env: dict[str, str]) -> tuple[list[str], dict[str, str], Path, str]:
        """(boxed argv, environment, cwd, the box's description) to start the server with."""
        from mcp_evals_pipeline.sandbox import server_box  # lazily: the sandbox package imports docker

        inst, scratch = self.installation, self.work.scratch
        home, tmp = scratch / "home", scratch / "tmp"
        for path in (home, tmp):
            path.mkdir(exist_ok=True)
        fill = (lambda text: text.replace("{port}", str(port))) if port is not None else (lambda text: text)
        assert self.server.command
        env = procs.sanitized_env(home=home, tmp=tmp, path_prefix=inst.path_prefix,
                                  extra={**({"PORT": str(port)} if port is not None else {}),
                                         **{k: fill(v) for k, v in extra_env.items()}})
        box, description = server_box.prefix(
            readable=server_box.runtime_roots(inst.interpreter, inst.path_prefix, inst.runtime_roots),
            writable=[self.work.copy, home, tmp], ro_binds=inst.ro_binds, cwd=self.work.copy, env=env)
        return [*box, *map(fill, self.server.command)], env, self.work.copy, description


def _declaration(server: UsageServer, root: Path) -> str:
    name, version = server.distribution
    if server.ecosystem == "pypi":
        (root / "requirements.txt").write_text(f"{name}=={version}\n")
        return "python"
    (root / "package.json").write_text(json.dumps({"name": "server-under-evaluation", "version": "0.0.0",
                                                   "private": True, "dependencies": {name: version}}, indent=2))
    return "node"


@contextlib.contextmanager
def installed(server: UsageServer, scratch: Path) -> Iterator[Installed]:
    """The pinned package installed (or its cached build reused), until the block ends."""
    declared = scratch / "package"
    declared.mkdir(parents=True, exist_ok=True)
    runtime = _declaration(server, declared)
    with workdir_for(declared) as work:
        try:
            installation = runtime_for(runtime).install(work)
        except InstallError as exc:
            raise PublishedServerError(f"{server.package} could not be installed: {exc}") from exc
        except Exception as exc:  # no box on this host, a toolchain that did not install
            raise PublishedServerError(f"{server.package} could not be installed: {type(exc).__name__}: "
                                       f"{exc}") from exc
        yield Installed(server, work, installation)
