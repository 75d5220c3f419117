"""The typecheck defaults (node_runtime.DEFAULT_COMPILER_OPTIONS): a workspace without tsconfig.json that the
prompts invite (top-level await, `process.env.PORT`, an npm package's import, no @types/node declared) typechecks
whatever TypeScript checks it: the grader's pinned one, or the workspace's own `typescript@latest` (7 and later:
a native compiler whose own defaults differ: strict, `types: []`, side-effect imports checked), or the grader's
again when the workspace declares one too old for the defaults. A type error still fails at contract.typecheck
under each.

Three small dependency sets (zod, with typescript@latest, with typescript 4.9), each installed once a day into the
grader's cache (~5 s cold); the typechecks take ~1 s each after that.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_evals_pipeline.contracts.task import TaskContract
from mcp_evals_pipeline.grader import grade_workspace_sync
from mcp_evals_pipeline.grader.node_runtime import DEFAULT_COMPILER_OPTIONS, DEFAULT_OPTIONS_SINCE, package_version
from mcp_evals_pipeline.grader.runtimes import runtime_for
from mcp_evals_pipeline.grader.scratch import workdir_for

from .conftest import REPO, TASKS, write_tree

pytestmark = pytest.mark.usefixtures("no_tsc_cache")  # these test the compilers, not the cache

RUNTIME = runtime_for("node")
INVITED = {
    "src/server.ts": """
        import "./banner.css";
        import { z } from "zod";
        import { setTimeout as sleep } from "node:timers/promises";
        import { helper } from "./helper";

        await sleep(1);
        const port = Number(process.env.PORT ?? 3000);
        const schema = z.object({ a: z.number() });
        export function twice(x) {
          return x * 2 + port + helper([3, 1, 2].toSorted()) + Buffer.byteLength("é");
        }
        export const parsed = schema.parse({ a: 1 });
        """,
    "src/helper.ts": "export const helper = (xs: number[]) => xs.length;\n",
}
TYPE_ERROR = {"src/server.ts": 'const n: number = "one";\nexport default n;\n'}


def _manifest(typescript: str | None) -> dict[str, str]:
    manifest = {"name": "defaults", "private": True, "type": "module", "dependencies": {"zod": "^4.1.0"}}
    if typescript:
        manifest["devDependencies"] = {"typescript": typescript}
    return {"package.json": json.dumps(manifest)}


# None: the grader's pinned TypeScript; "~4.9.5": the workspace's own, too old for the defaults (Bundler
# resolution): the grader's checks them instead.
@pytest.mark.parametrize("typescript", [None, "latest", "~4.9.5"])
def test_an_invited_workspace_without_tsconfig_typechecks_and_a_type_error_fails(tmp_path: Path,
                                                                                  typescript: str | None) -> None:
    invited = write_tree(tmp_path / "invited", {**_manifest(typescript), **INVITED})
    with workdir_for(invited) as work:
        installation = RUNTIME.install(work)
        version = package_version(installation.node_modules, "typescript")  # type: ignore[attr-defined]
        assert (version is None) == (typescript is None)
        if typescript == "latest":
            assert int(version.split(".")[0]) >= 7, version  # type: ignore[union-attr]
        if typescript == "~4.9.5":
            assert version and version.startswith("4.9.")
        assert RUNTIME.typecheck(work, installation) == []
        assert "net=none" in work.isolation["typecheck"]
        if typescript == "latest":  # native: no JavaScript API for a long-lived worker, the one-shot tsc checks
            assert "long-lived" not in work.isolation["typecheck"]
        config = json.loads((work.copy / ".mcp-evals-tsconfig.json").read_text())["compilerOptions"]
        assert config["types"] == ["node"] and config["noUncheckedSideEffectImports"] is False
    assert not (invited / ".mcp-evals-tsconfig.json").exists()

    broken = write_tree(tmp_path / "broken", {**_manifest(typescript), **TYPE_ERROR})
    contract = TaskContract.model_validate_json((TASKS / "v5-01-basic-tool-server" / "task.json").read_text())
    grade = grade_workspace_sync(contract, broken)
    assert grade.failure_code == "contract.typecheck"
    assert grade.first_failure and "src/server.ts:1: TS2322" in (grade.first_failure.detail or "")


def test_the_docs_state_every_default() -> None:
    """docs/task-authoring.md states the defaults: every option, with its value, as the constant sets it."""
    docs = (REPO / "docs" / "task-authoring.md").read_text()
    section = docs[docs.index("### Typecheck defaults"):]
    stated = {name: value for _, name, value in DEFAULT_OPTIONS_SINCE} | DEFAULT_COMPILER_OPTIONS
    for name, value in stated.items():
        written = json.dumps(value, separators=(",", ":"))
        assert f"`{name}: {written}`" in section, f"docs/task-authoring.md does not state {name}: {written}"
