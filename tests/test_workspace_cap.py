"""The grading's copy of a workspace: sparse files stay sparse, a workspace over the cap is refused as
contract.install (named), FIFOs, sockets and devices are left out, named, and never opened. The real grader and
real files (a real sparse file, a real FIFO and a real listening socket)."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from mcp_evals_pipeline.contracts.task import TaskContract
from mcp_evals_pipeline.grader import grade_workspace_sync
from mcp_evals_pipeline.grader.scratch import CAP_ENV, WorkspaceTooLarge, copy_workspace

from .conftest import MINIMAL_SERVER, write_tree

REQS = {"requirements.txt": "mcp>=2.3,<3\n"}
TWO_GB = 2 * 1024**3


def _sparse(path: Path, size: int) -> Path:
    """A file of `size` bytes that occupies (almost) nothing: a few bytes of data at its start and end."""
    with path.open("wb") as f:
        f.write(b"head")
        f.seek(size - 4)
        f.write(b"tail")
    return path


def _real_bytes(root: Path) -> int:
    return sum(p.lstat().st_blocks * 512 for p in root.rglob("*"))


def test_a_sparse_file_is_copied_sparse(tmp_path: Path) -> None:
    workspace = write_tree(tmp_path / "ws", {"server.py": "print('hi')\n"})
    _sparse(workspace / "blob.bin", 64 * 1024 * 1024)
    if _real_bytes(workspace) > 8 * 1024 * 1024:
        pytest.skip("this filesystem does not keep holes")
    copied = copy_workspace(workspace, tmp_path / "copy", cap_bytes=128 * 1024 * 1024)
    blob = tmp_path / "copy" / "blob.bin"
    assert blob.stat().st_size == 64 * 1024 * 1024  # the same file ...
    with blob.open("rb") as f:
        assert f.read(4) == b"head" and (f.seek(64 * 1024 * 1024 - 4), f.read(4))[1] == b"tail"
    assert _real_bytes(tmp_path / "copy") < 1024 * 1024  # ... that costs the scratch nothing
    assert copied.special == [] and copied.outside == []


def test_a_2_gb_sparse_file_is_refused_at_its_size_without_using_the_scratch(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its holes cost no disk, but every reader of the copy would read 2 GB of zeros: charged at its size."""
    monkeypatch.delenv(CAP_ENV, raising=False)
    workspace = write_tree(tmp_path / "ws", {"server.py": "print('hi')\n"})
    _sparse(workspace / "blob.bin", TWO_GB)
    with pytest.raises(WorkspaceTooLarge, match=r"more than the 512 MB .*MCP_EVALS_WORKSPACE_CAP_MB.*blob\.bin"):
        copy_workspace(workspace, tmp_path / "copy")  # the default cap
    assert _real_bytes(tmp_path / "copy") < 1024 * 1024


def test_a_workspace_over_the_cap_is_refused_before_it_fills_the_scratch(tmp_path: Path) -> None:
    workspace = write_tree(tmp_path / "ws", {"server.py": "print('hi')\n"})
    (workspace / "big.bin").write_bytes(os.urandom(3 * 1024 * 1024))
    with pytest.raises(WorkspaceTooLarge, match=r"more than the 1 MB .*MCP_EVALS_WORKSPACE_CAP_MB.*big\.bin"):
        copy_workspace(workspace, tmp_path / "copy", cap_bytes=1024 * 1024)
    assert not (tmp_path / "copy" / "big.bin").exists()


def test_over_the_cap_the_grade_is_contract_install_naming_the_cap(
        tmp_path: Path, minimal_contract: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CAP_ENV, "1")
    workspace = write_tree(tmp_path, {**REQS, "server.py": MINIMAL_SERVER})
    (workspace / "data").mkdir()
    (workspace / "data" / "big.bin").write_bytes(os.urandom(2 * 1024 * 1024))
    grade = grade_workspace_sync(TaskContract.model_validate(minimal_contract), workspace)
    assert grade.failure_code == "contract.install" and grade.valid  # the agent's failure: in every denominator
    first = grade.first_failure
    assert first is not None and first.id == "install"
    assert CAP_ENV in (first.detail or "") and "data/big.bin" in (first.detail or "")
    assert all(c.detail == "blocked by install" for c in grade.checks[1:]) and len(grade.checks) > 1


def test_fifos_and_sockets_are_left_out_named_and_never_opened(tmp_path: Path) -> None:
    workspace = write_tree(tmp_path / "ws", {"server.py": "print('hi')\n", "sub/keep.txt": "kept\n"})
    os.mkfifo(workspace / "sub" / "pipe")  # opening it for reading would block the copy forever
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(workspace / "sock"))
    try:
        copied = copy_workspace(workspace, tmp_path / "copy")
    finally:
        listener.close()
    assert sorted(copied.special) == ["sock (socket)", "sub/pipe (FIFO)"]
    assert (tmp_path / "copy" / "sub" / "keep.txt").read_text() == "kept\n"
    assert not (tmp_path / "copy" / "sub" / "pipe").exists() and not (tmp_path / "copy" / "sock").exists()


def test_a_workspace_with_a_sparse_file_and_a_fifo_still_passes_and_names_the_fifo(
        tmp_path: Path, minimal_contract: dict) -> None:
    workspace = write_tree(tmp_path, {**REQS, "server.py": MINIMAL_SERVER})
    _sparse(workspace / "blob.bin", 64 * 1024 * 1024)
    os.mkfifo(workspace / "pipe")
    grade = grade_workspace_sync(TaskContract.model_validate(minimal_contract), workspace)
    assert grade.contract_pass, grade.first_failure
    install = next(c for c in grade.checks if c.id == "install")
    assert "pipe (FIFO)" in (install.detail or "")
