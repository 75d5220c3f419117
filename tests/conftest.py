"""Shared helpers. Tests run the real grader: real uv environments, real server processes, a real MCP client."""

from __future__ import annotations

import json
import os
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

# The tests run offline: no trial asks the real registries for the SDK's latest release (tests/test_suites.py
# serves a registry of its own).
os.environ.setdefault("MCP_EVALS_SDK_REGISTRY", "off")

REPO = Path(__file__).resolve().parent.parent
TASKS = REPO / "tasks"


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(content).lstrip("\n"))
    return root


def write_task(root: Path, task_id: str, contract: dict, prompt: str = "A prompt.\n",
               golden: dict[str, str] | None = None) -> Path:
    task_dir = root / task_id
    task_dir.mkdir(parents=True)
    (task_dir / "prompt.md").write_text(prompt)
    (task_dir / "task.json").write_text(json.dumps(contract, indent=2))
    write_tree(task_dir / "golden", golden or {"server.py": "print('hi')\n"})
    return task_dir


MINIMAL_SERVER = '''
import os
from mcp.server.mcpserver import MCPServer

mcp = MCPServer("fixture")

@mcp.tool()
def echo(text: str) -> str:
    return text

if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
'''


@pytest.fixture
def minimal_contract() -> dict:
    return {
        "title": "fixture",
        "runtime": "python",
        "entryCandidates": ["server.py"],
        "expectedTools": [{"name": "echo", "requiredProps": ["text"]}],
        "calls": [{"tool": "echo", "args": {"text": "hello"}, "expect": {"type": "contains", "value": "hello"}}],
    }


@pytest.fixture(scope="session")
def legacy_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """All 259 real run directories of the earlier harness (run.json, report.md, memos), unpacked from a 66 KB
    archive of ../shared/legacy_runs so the tests never depend on where the checkout sits."""
    import tarfile

    target = tmp_path_factory.mktemp("legacy")
    with tarfile.open(Path(__file__).parent / "fixtures" / "legacy_runs.tar.xz") as archive:
        archive.extractall(target, filter="data")
    return target / "legacy_runs"


@pytest.fixture(params=["bwrap", "docker"])
def grader_box(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Grading's boxes in each form (grader/boxes.py): bubblewrap, and containers on the test engine."""
    from mcp_evals_pipeline.grader.boxes import SWITCH_ENV
    from mcp_evals_pipeline.sandbox import server_box

    kind: str = request.param
    monkeypatch.setenv(SWITCH_ENV, kind if kind == "docker" else "1")
    if kind == "docker":
        from .test_docker_config import _engine_skip_reason

        reason = _engine_skip_reason()
        if reason:
            pytest.skip(reason)
    elif not server_box.available():
        pytest.skip("bubblewrap with a pid namespace is not available on this host")
    return kind


def docker_leftovers(prefix: str = "mcp-evals-") -> list[str]:
    """Containers of this suite's boxes still on the engine (each box removes its own)."""
    import docker

    return [c.name for c in docker.from_env().containers.list(all=True, filters={"label": "mcp-evals.sandbox"})
            if c.name.startswith(prefix)]


@pytest.fixture(autouse=True)
def _one_engine_test_at_a_time(request: pytest.FixtureRequest) -> Iterator[None]:
    """Under pytest-xdist (`make test` runs three workers), every test touching the one test engine holds one lock
    for its whole run: a box's "no container left behind" check must not see another test's live one. (A lock, not
    `--dist loadgroup`'s xdist_group: under pytest 9 that marker no longer keeps a group on one worker.)"""
    if "docker" not in request.node.nodeid.lower():
        yield
        return
    import fcntl
    import tempfile

    with open(Path(tempfile.gettempdir()) / f"mcp-evals-engine-tests-{os.getuid()}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture
def no_tsc_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every typecheck really runs a compiler: for the tests of the compilers themselves (grader/tsc_cache.py would
    otherwise answer a workspace another test already typechecked)."""
    monkeypatch.setenv("MCP_EVALS_TSC_CACHE", "0")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests marked `long` run first, the longest first (`long(seconds)`: about how long it takes alone; 60
    when unsaid), the rest in file order: `make test` hands tests to its xdist workers one at a time
    (`--maxschedchunk 1`), so the longest start at once instead of leaving one worker busy while the others have
    finished."""
    def weight(item: pytest.Item) -> float:
        marker = item.get_closest_marker("long")
        if marker is None:
            return 0
        return -(marker.args[0] if marker.args else 60)

    items.sort(key=weight)
