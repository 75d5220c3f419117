"""Agent-written code never runs on the host: tried as an attacker would, through the real grader.

A workspace's build backend (uv imports it to build `./evilpkg`) and a workspace's npm lifecycle script (npm runs
it installing a manifest as is) each probe what they can reach: a canary file in the checkout, a canary variable
of the harness (in its environment and in every /proc/*/environ), writes into the checkout and into the shared
caches. They report through the install failure they cause, so the record itself shows what they saw. Host
canaries carry the prefix HOSTPROBE (CANARY is what usage-eval worlds plant on purpose).
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_evals_pipeline.contracts.task import TaskContract
from mcp_evals_pipeline.grader import grade_workspace_sync
from mcp_evals_pipeline.grader.boxes import SWITCH_ENV, UNBOXED_ENV
from mcp_evals_pipeline.paths import cache_dir
from mcp_evals_pipeline.sandbox import server_box

from .conftest import REPO, TASKS, docker_leftovers, write_tree

PY_TASK = TASKS / "py-v4-01-basic-tool-server"
TS_TASK = TASKS / "v5-01-basic-tool-server"

needs_box = pytest.mark.skipif(not server_box.available(), reason="no bubblewrap box on this host")

# Runs as the build backend (python) or as the lifecycle script (node, via a python3 call): probes, then fails with
# a one-line report. `targets.json` names what to look for; it is written by the test.
PROBE = r'''
import glob, json, os, sys
t = json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "targets.json")))
report = {}
try:
    open(t["ran_marker"], "w").write("ran")  # the host's tmp_path: only there when the probe runs unboxed
except OSError:
    pass
try:
    report["checkout_file"] = open(t["checkout_file"]).read()
except OSError as exc:
    report["checkout_file"] = type(exc).__name__
report["env"] = "leaked:" + os.environ[t["env_name"]] if t["env_name"] in os.environ else "absent"
leaks = 0
for path in glob.glob("/proc/[0-9]*/environ"):
    try:
        leaks += t["env_value"] in open(path, errors="replace").read()
    except OSError:
        pass
report["proc_leaks"] = leaks
wrote = []
targets = [t["checkout_write"], *t["shared_files"]]
report["tried"] = len(targets)
for path in targets:
    try:
        with open(path, "a") as f:
            f.write("\n# poisoned by an earlier workspace\n")
        wrote.append(path)
    except OSError:
        pass
report["wrote"] = wrote
print("HOSTPROBE-REPORT " + json.dumps(report, sort_keys=True), file=sys.stderr, flush=True)
sys.exit(1)
'''

BACKEND = "import probe  # noqa - importing the backend runs the probe\n"


@pytest.fixture
def targets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict]:
    token = uuid.uuid4().hex
    checkout_file = REPO / f".hostprobe-{token}"
    checkout_file.write_text(f"HOSTPROBE-checkout-{token}")
    value = f"HOSTPROBE-env-{token}"
    monkeypatch.setenv("HOSTPROBE_PLAIN_SETTING", value)  # a name redaction does not cover: only a box protects it
    found = {
        "checkout_file": str(checkout_file), "checkout_write": str(REPO / f".hostprobe-written-{token}"),
        "env_name": "HOSTPROBE_PLAIN_SETTING", "env_value": value, "ran_marker": str(tmp_path / "probe-ran"),
        "shared_files": [],  # filled by each test with what other gradings share (host paths)
        "secret": checkout_file.read_text(),
    }
    try:
        yield found
    finally:
        checkout_file.unlink(missing_ok=True)
        Path(found["checkout_write"]).unlink(missing_ok=True)


def _contract(task: Path) -> TaskContract:
    return TaskContract.model_validate_json((task / "task.json").read_text())


def _report(detail: str) -> dict[str, object]:
    line = next(x for x in detail.splitlines() if "HOSTPROBE-REPORT" in x)
    return json.loads(line.split("HOSTPROBE-REPORT ", 1)[1])


def _tree_hash(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _shared_env(grade_detail: str) -> Path:
    # "requirements.txt -> reused environment <key> (mcp ...)"
    key = grade_detail.split(" environment ", 1)[1].split()[0]
    return cache_dir() / "envs" / key


def _shared_files() -> list[str]:
    """Files of the shared caches another grading will read (python environments, node_modules)."""
    found = [*cache_dir().glob("envs/*/lib/python*/site-packages/mcp/__init__.py"),
             *cache_dir().glob("node-envs/*/node_modules/mcp-use/package.json")]
    return [str(p) for p in found]


def _evil_python_workspace(root: Path, targets: dict) -> Path:
    return write_tree(root, {
        "requirements.txt": "mcp>=2.3,<3\n./evilpkg\n",
        "server.py": (PY_TASK / "golden" / "server.py").read_text(),
        "evilpkg/pyproject.toml": '[build-system]\nrequires = []\nbuild-backend = "evil_backend"\n'
                                  'backend-path = ["."]\n\n[project]\nname = "evilpkg"\nversion = "1.0"\n',
        "evilpkg/evil_backend.py": BACKEND,
        "evilpkg/probe.py": PROBE,
        "evilpkg/targets.json": json.dumps(targets),
    })


def _assert_contained(report: dict, targets: dict, detail: str) -> None:
    assert report["checkout_file"] in ("FileNotFoundError", "PermissionError"), report
    assert report["env"] == "absent" and report["proc_leaks"] == 0, report
    # It tried the checkout and every shared file it was given (each exists on the host), and reached none.
    assert report["wrote"] == [] and report["tried"] == 1 + len(targets["shared_files"]) >= 2, report
    assert not Path(targets["checkout_write"]).exists()
    assert not Path(targets["ran_marker"]).exists()  # the probe ran, but not where the host's /tmp is
    assert targets["secret"] not in detail and targets["env_value"] not in detail


def _assert_install_box(kind: str, isolation: str) -> None:
    """The install ran in the box of the form under test, with only the registries' proxy for a network."""
    if kind == "docker":
        assert isolation.startswith("docker container") and "none (loopback only)" in isolation, isolation
        assert "user 65534:65534" in isolation and "egress proxy (allow=" in isolation, isolation
        assert docker_leftovers() == []
    else:
        assert "net=proxy" in isolation and "uid=65534" in isolation, isolation


def test_a_malicious_build_backend_is_boxed_and_cannot_poison_the_next_grading(
        grader_box: str, tmp_path: Path, targets: dict) -> None:
    golden = _contract(PY_TASK)
    first = grade_workspace_sync(golden, PY_TASK / "golden")
    assert first.contract_pass, first.first_failure
    shared = _shared_env(first.checks[0].detail or "")
    before = _tree_hash(shared)
    targets["shared_files"] = _shared_files()

    grade = grade_workspace_sync(golden, _evil_python_workspace(tmp_path / "evil", targets))
    assert grade.failure_code == "contract.install", grade.first_failure
    detail = grade.first_failure.detail or ""
    _assert_contained(_report(detail), targets, detail)
    _assert_install_box(grader_box, grade.isolation["install"])

    # The next grading of the same dependency set gets exactly what it got before.
    again = grade_workspace_sync(golden, PY_TASK / "golden")
    assert again.contract_pass and _shared_env(again.checks[0].detail or "") == shared
    assert "reused environment" in (again.checks[0].detail or "")
    assert _tree_hash(shared) == before


def test_an_npm_lifecycle_script_is_boxed(grader_box: str, tmp_path: Path, targets: dict) -> None:
    """A manifest with a local reference is installed as is, so its own scripts run: in the install box."""
    first = grade_workspace_sync(_contract(TS_TASK), TS_TASK / "golden")  # a shared node_modules to attack
    assert first.contract_pass, first.first_failure
    shared = cache_dir() / "node-envs" / (first.checks[0].detail or "").split(" node_modules ", 1)[1].split(",")[0]
    before = _tree_hash(shared)
    targets["shared_files"] = _shared_files()
    manifest = json.loads((TS_TASK / "golden" / "package.json").read_text())
    manifest["dependencies"]["helper"] = "file:./helper"
    manifest["scripts"] = {"preinstall": "python3 probe.py"}
    workspace = write_tree(tmp_path / "evil", {
        "package.json": json.dumps(manifest), "probe.py": PROBE, "targets.json": json.dumps(targets),
        "helper/package.json": '{"name": "helper", "version": "1.0.0"}\n',
        "src/server.ts": (TS_TASK / "golden" / "src" / "server.ts").read_text(),
    })
    grade = grade_workspace_sync(_contract(TS_TASK), workspace)
    assert grade.failure_code == "contract.install", grade.first_failure
    detail = grade.first_failure.detail or ""
    _assert_contained(_report(detail), targets, detail)
    _assert_install_box(grader_box, grade.isolation["install"])
    assert _tree_hash(shared) == before


@needs_box
@pytest.mark.parametrize(("files", "reason"), [
    ({"requirements.txt": "@link"}, "requirements.txt is a symlink to a path outside the workspace"),
    ({"requirements.txt": "-r {secret_path}\n"}, "includes '{secret_path}', a file outside the workspace"),
    ({"requirements.txt": "mcp>=2.3,<3\n-r ../../../../../../../..{secret_path}\n"}, "a file outside the workspace"),
    ({"requirements.txt": "-r extra.txt\n", "extra.txt": "@link"}, "extra.txt', a symlink to a path outside"),
])
def test_requirement_files_that_leave_the_workspace_are_refused(
        tmp_path: Path, targets: dict, files: dict[str, str], reason: str) -> None:
    secret_path = targets["checkout_file"]
    workspace = write_tree(tmp_path / "ws", {"server.py": (PY_TASK / "golden" / "server.py").read_text(),
                                             **{k: v.format(secret_path=secret_path) for k, v in files.items()
                                                if v != "@link"}})
    for name, content in files.items():
        if content == "@link":
            (workspace / name).symlink_to(secret_path)
    grade = grade_workspace_sync(_contract(PY_TASK), workspace)
    assert grade.failure_code == "contract.install" and grade.valid
    detail = grade.first_failure.detail or ""
    assert reason.format(secret_path=secret_path) in detail, detail
    assert targets["secret"] not in grade.model_dump_json()
    assert "install" not in grade.isolation  # refused before anything ran


@needs_box
def test_an_include_inside_the_workspace_is_legal_and_part_of_the_key(tmp_path: Path) -> None:
    golden = (PY_TASK / "golden" / "server.py").read_text()
    one = write_tree(tmp_path / "one", {"server.py": golden, "requirements.txt": "-r deps/base.txt\n",
                                        "deps/base.txt": "mcp>=2.3,<3\n"})
    two = write_tree(tmp_path / "two", {"server.py": golden, "requirements.txt": "-r deps/base.txt\n",
                                        "deps/base.txt": "mcp>=2.3,<3\nhttpx2>=2.10\n"})
    first = grade_workspace_sync(_contract(PY_TASK), one)
    second = grade_workspace_sync(_contract(PY_TASK), two)
    assert first.contract_pass and second.contract_pass, (first.first_failure, second.first_failure)
    # Same requirements.txt, different included file: never the same environment.
    assert _shared_env(first.checks[0].detail or "") != _shared_env(second.checks[0].detail or "")


def test_without_a_box_agent_code_does_not_run(tmp_path: Path, targets: dict,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail closed: infra.sandbox naming the reason and the opt-out, and the backend never ran anywhere."""
    monkeypatch.setenv(SWITCH_ENV, "0")
    monkeypatch.delenv(UNBOXED_ENV, raising=False)
    grade = grade_workspace_sync(_contract(PY_TASK), _evil_python_workspace(tmp_path / "evil", targets))
    assert grade.failure_code == "infra.sandbox" and not grade.valid
    assert UNBOXED_ENV in (grade.error or "") and f"{SWITCH_ENV}=0" in (grade.error or "")
    assert not Path(targets["ran_marker"]).exists() and not Path(targets["checkout_write"]).exists()
    # A workspace whose environment is already built still never starts its server.
    golden = grade_workspace_sync(_contract(PY_TASK), PY_TASK / "golden")
    assert golden.failure_code == "infra.sandbox" and "start" not in golden.isolation


@needs_box
def test_a_secret_echoed_by_the_installer_is_redacted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The second line of defence: every detail passes one redaction step (the harness's secrets, by value)."""
    secret = f"sk-hostprobe-{uuid.uuid4().hex}"
    monkeypatch.setenv("HOSTPROBE_API_KEY", secret)
    workspace = write_tree(tmp_path / "ws", {"server.py": (PY_TASK / "golden" / "server.py").read_text(),
                                             "requirements.txt": f"mcp>=2.3,<3\n{secret} ~= !!\n"})
    grade = grade_workspace_sync(_contract(PY_TASK), workspace)
    assert grade.failure_code == "contract.install"
    assert secret not in grade.model_dump_json()
    assert "[redacted:HOSTPROBE_API_KEY]" in (grade.first_failure.detail or "")


def test_outside_links_are_left_out_of_the_copy_and_named(tmp_path: Path) -> None:
    from mcp_evals_pipeline.grader.scratch import copy_workspace

    workspace = write_tree(tmp_path / "ws", {"a.txt": "a", "sub/b.txt": "b"})
    (workspace / "inside").symlink_to("sub/b.txt")
    (workspace / "absolute-inside").symlink_to(workspace / "a.txt")
    (workspace / "outside").symlink_to(REPO / "pyproject.toml")
    (workspace / "sub" / "up").symlink_to("../..")
    os.mkfifo(workspace / "pipe")
    copied = copy_workspace(workspace, tmp_path / "copy")
    assert sorted(copied.outside) == ["outside", "sub/up"] and copied.special == ["pipe (FIFO)"]
    copy = tmp_path / "copy"
    assert (copy / "inside").read_text() == "b" and (copy / "absolute-inside").read_text() == "a"
    assert (copy / "absolute-inside").resolve() == copy / "a.txt"  # points into the copy, not the workspace
    assert not (copy / "outside").exists() and not (copy / "pipe").exists()
