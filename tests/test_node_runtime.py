"""The node runtime on real workspaces: npm installs, tsc, tsx-started servers, a real MCP client.

The first test in a cold cache installs the pinned toolchain (~10 s) and mcp-use's node_modules (~8 s, in an
install box with a private download cache); after that every install of the same package.json reuses the shared
node_modules, bound read-only into the boxes (nothing runs). The whole file takes ~20 s warm.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mcp_evals_pipeline.contracts.grade import TrialGrade
from mcp_evals_pipeline.contracts.task import TaskContract
from mcp_evals_pipeline.grader import grade_workspace_sync
from mcp_evals_pipeline.grader.node_runtime import NodeInstallation, NodeRuntime
from mcp_evals_pipeline.grader.python_env import InstallError
from mcp_evals_pipeline.grader.runtimes import Installation, runtime_for
from mcp_evals_pipeline.grader.scratch import Workdir, workdir_for
from mcp_evals_pipeline.tasks.catalog import parse_contract

from .conftest import TASKS, write_tree
from .support.processes import running_under

pytestmark = pytest.mark.usefixtures("no_tsc_cache")  # these test the compilers, not the cache

TOOL_TASK = TASKS / "v5-01-basic-tool-server"
QUEUE_TASK = TASKS / "v5-02-stateful-ticket-queue"
LEGACY_TASKS = Path(__file__).resolve().parent / "fixtures" / "legacy_tasks"
RUNTIME = runtime_for("node")
NO_DEPENDENCIES = {"package.json": '{"name": "fixture", "private": true, "type": "module"}\n'}


def _contract(task: Path) -> TaskContract:
    return TaskContract.model_validate_json((task / "task.json").read_text())


def _copy(solution: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(solution, tmp_path / "ws"))


def _snapshot(root: Path) -> dict[str, tuple[bytes, int] | None]:
    """Every path under root with its bytes and mtime (None for directories)."""
    return {p.relative_to(root).as_posix(): (None if p.is_dir() else (p.read_bytes(), p.stat().st_mtime_ns))
            for p in root.rglob("*")}


def _why(grade: TrialGrade) -> str:
    failure = grade.first_failure
    return failure.detail or "" if failure else ""


def test_node_is_a_registered_runtime() -> None:
    assert isinstance(RUNTIME, NodeRuntime)
    assert _contract(TOOL_TASK).effective_runtime == "node"


def test_golden_passes_and_the_workspace_is_left_as_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    installations: list[NodeInstallation] = []
    install = NodeRuntime.install

    def recording_install(self: NodeRuntime, work: Workdir) -> Installation:
        installation = install(self, work)
        assert isinstance(installation, NodeInstallation)
        installations.append(installation)
        return installation

    monkeypatch.setattr(NodeRuntime, "install", recording_install)
    workspace = _copy(QUEUE_TASK / "golden", tmp_path)
    # The agent's own node_modules is never used (this one would break the server) nor touched.
    write_tree(workspace, {"node_modules/mcp-use/package.json": '{"name": "mcp-use", "version": "0.0.1"}\n',
                           "node_modules/mcp-use/index.js": "throw new Error('not this one');\n"})
    before = _snapshot(workspace)
    grade = grade_workspace_sync(_contract(QUEUE_TASK), workspace)
    assert grade.contract_pass, _why(grade)
    assert _snapshot(workspace) == before
    # The server ran from the grader's private copy; its tree is gone, and so is the copy.
    [installation] = installations
    assert installation.workdir != workspace and not installation.workdir.exists()
    assert running_under(installation.workdir) == []
    assert grade.sdk_path == "mcp-use" and (grade.sdk_version or "").startswith("2.")
    assert grade.protocol_version == "2025-11-25" and grade.server_name == "ticket-queue"
    install = next(c for c in grade.checks if c.id == "install")
    assert "npm install" in (install.detail or "") and "node 22." in (install.detail or "")


def test_install_is_private_shared_and_warm(tmp_path: Path) -> None:
    workspace = _copy(TOOL_TASK / "alternates" / "official-sdk-node-http", tmp_path)
    with workdir_for(workspace) as one, workdir_for(workspace) as two:
        first = RUNTIME.install(one)
        second = RUNTIME.install(two)
        assert isinstance(first, NodeInstallation) and isinstance(second, NodeInstallation)
        assert "package-lock.json -> npm ci" in first.detail
        # The second install reuses the first's node_modules: nothing ran (no box was needed).
        assert "reused node_modules" in second.detail and second.box is None
        assert second.node_modules == first.node_modules and not (workspace / "node_modules").exists()
        assert (second.node_modules / "@modelcontextprotocol" / "sdk" / "package.json").is_file()
        assert second.ro_binds == [(second.node_modules, two.copy / "node_modules")]
        assert (second.versions["official-sdk"] or "").startswith("1.")
        command = RUNTIME.default_start_command(second, two.copy / "src" / "server.ts")
        assert second.workdir == two.copy and command[-1] == "src/server.ts"  # the grader runs it there
    assert not one.copy.exists() and not two.copy.exists()


def test_type_error_fails_typecheck_naming_file_and_line(tmp_path: Path) -> None:
    grade = grade_workspace_sync(_contract(TOOL_TASK), _copy(TOOL_TASK / "negatives" / "type-error", tmp_path))
    assert grade.failure_code == "contract.typecheck"
    assert "src/server.ts:16: TS2322" in _why(grade)


def test_install_failure_names_the_package(tmp_path: Path) -> None:
    workspace = _copy(TOOL_TASK / "negatives" / "unpublished-sdk-package", tmp_path)
    before = _snapshot(workspace)
    grade = grade_workspace_sync(_contract(TOOL_TASK), workspace)
    assert grade.failure_code == "contract.install" and grade.valid
    assert "E404" in _why(grade)
    assert "@modelcontextprotocol/typescript-sdk" in _why(grade)
    assert _snapshot(workspace) == before


@pytest.mark.parametrize(("files", "message"), [
    ({"src/server.ts": "export {};\n"}, "no package.json"),
    ({"package.json": "{not json", "src/server.ts": "export {};\n"}, "package.json does not parse"),
])
def test_a_bad_declaration_is_a_contract_failure(tmp_path: Path, files: dict[str, str], message: str) -> None:
    with pytest.raises(InstallError) as failed, workdir_for(write_tree(tmp_path, files)) as work:
        RUNTIME.install(work)
    assert not failed.value.infra and message in failed.value.detail


LOOSE_TS = "export function twice(x) {\n  return x * 2;\n}\n"
STRICT_TSCONFIG = '{"compilerOptions": {"strict": true, "noEmit": true, "module": "ESNext", ' \
                  '"moduleResolution": "Bundler", "skipLibCheck": true}, "include": ["src"]}\n'


def test_the_workspace_tsconfig_is_used_else_lenient_defaults(tmp_path: Path) -> None:
    lenient = write_tree(tmp_path / "lenient", {**NO_DEPENDENCIES, "src/twice.ts": LOOSE_TS,
                                                "src/port.ts": "export const port = Number(process.env.PORT);\n"})
    strict = write_tree(tmp_path / "strict", {**NO_DEPENDENCIES, "src/twice.ts": LOOSE_TS,
                                              "tsconfig.json": STRICT_TSCONFIG})
    broken_js = write_tree(tmp_path / "js", {**NO_DEPENDENCIES, "server.js": "const x = ;\n"})
    results = {}
    for name, workspace in (("lenient", lenient), ("strict", strict), ("js", broken_js)):
        with workdir_for(workspace) as work:
            results[name] = RUNTIME.typecheck(work, RUNTIME.install(work))
            assert "net=none" in work.isolation["typecheck"]
    assert results["lenient"] == []  # implicit any allowed, Node's types (process) available
    assert len(results["strict"]) == 1 and results["strict"][0].startswith("src/twice.ts:1: TS7006")
    assert results["js"] and results["js"][0].startswith("server.js:1: TS1109")
    assert not (lenient / "node_modules").exists() and not list(lenient.glob(".mcp-evals*"))


def test_typecheck_without_an_install_ignores_unresolved_packages(tmp_path: Path) -> None:
    """Source-imports tasks are graded on typecheck + imports, with no install."""
    clean = write_tree(tmp_path / "clean", {"src/server.ts": 'import { MCPServer } from "mcp-use";\n'
                                                             "export const server = new MCPServer({});\n"})
    broken = write_tree(tmp_path / "broken", {"src/server.ts": 'import { MCPServer } from "mcp-use";\n'
                                                               'const n: number = "one";\n'})
    with workdir_for(clean) as work:
        assert RUNTIME.typecheck(work, None) == []
    with workdir_for(broken) as work:
        assert [p.split(" ")[:2] for p in RUNTIME.typecheck(work, None)] == [["src/server.ts:2:", "TS2322"]]
    assert RUNTIME.imported_modules(clean) == {"mcp-use"}


def test_a_local_file_dependency_gets_a_private_install(tmp_path: Path) -> None:
    workspace = write_tree(tmp_path, {
        "package.json": json.dumps({"name": "local", "private": True, "type": "module",
                                    "dependencies": {"helper": "file:./helper"}}),
        "helper/package.json": '{"name": "helper", "version": "1.0.0", "main": "index.js"}\n',
        "helper/index.js": "module.exports = { answer: 42 };\n",
        "src/server.ts": 'import helper from "helper";\nexport const answer: number = helper.answer;\n',
    })
    before = _snapshot(workspace)
    with workdir_for(workspace) as work:
        installation = RUNTIME.install(work)
        assert "private node_modules" in installation.detail and "net=proxy" in (installation.box or "")
        assert isinstance(installation, NodeInstallation)
        assert (installation.workdir / "node_modules" / "helper" / "index.js").is_file()
        assert RUNTIME.typecheck(work, installation) == []
    assert _snapshot(workspace) == before


LEGACY_QUEUE = '''
import { MCPServer } from "mcp-use";
import { z } from "zod";

type Ticket = { id: number; title: string; status: "open" | "claimed" | "closed" };
const tickets = new Map<number, Ticket>();
let nextId = 1;
const text = (value: unknown, isError = false) => ({
  content: [{ type: "text" as const, text: typeof value === "string" ? value : JSON.stringify(value) }],
  isError,
});
const find = (id: string) => tickets.get(Number(id));

const server = new MCPServer({ name: "legacy-queue", version: "1.0.0" });
server.tool({ name: "create_ticket", inputSchema: z.object({ title: z.string() }) }, async ({ title }) => {
  const ticket: Ticket = { id: nextId++, title, status: "open" };
  tickets.set(ticket.id, ticket);
  return text(ticket);
});
server.tool({ name: "list_tickets", inputSchema: z.object({}) }, async () => {
  const open = [...tickets.values()].filter((t) => t.status !== "closed");
  return text({ count: open.length, tickets: open });
});
for (const [name, status] of [["claim_ticket", "claimed"], ["close_ticket", "closed"]] as const) {
  server.tool({ name, inputSchema: z.object({ id: z.string() }) }, async ({ id }) => {
    const ticket = find(id);
    if (!ticket) return text(`ticket ${id} not found`, true);
    ticket.status = status;
    return text(ticket);
  });
}
await server.listen(Number(process.env.PORT));
'''


def test_a_legacy_node_contract_is_graded(tmp_path: Path) -> None:
    """The earlier harness's v3-02 (string ids, bare number-equals) loads as a node contract and grades."""
    contract = parse_contract(LEGACY_TASKS / "v3-02-stateful-ticket-queue.json")
    assert contract.runtime is None and contract.effective_runtime == "node"
    workspace = write_tree(tmp_path, {"package.json": (QUEUE_TASK / "golden" / "package.json").read_text(),
                                      "src/server.ts": LEGACY_QUEUE})
    grade = grade_workspace_sync(contract, workspace)
    assert grade.contract_pass, _why(grade)
    assert [c.id for c in grade.checks][-2:] == ["call:list_tickets:4", "call:list_tickets:5"]
