"""verify-tasks over the real suite, and proof that it catches a broken golden and a "fixed" negative."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from .conftest import REPO, TASKS


def _verify(*args: str, tasks_dir: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if tasks_dir is not None:
        env["MCP_EVALS_TASKS_DIR"] = str(tasks_dir)
    return subprocess.run([sys.executable, "-m", "mcp_evals_pipeline.cli", "verify-tasks", *args], cwd=REPO,
                          env=env, capture_output=True, text=True, check=False, timeout=600)


def test_the_whole_suite_grades_as_declared() -> None:
    done = _verify("--json")
    report = json.loads(done.stdout)
    bad = [(r["task"], r["solution"], r["expected"], r["got"], r["why"]) for r in report["results"] if not r["ok"]]
    assert done.returncode == 0 and report["ok"], bad or report["taskErrors"]
    kinds = {r["kind"] for r in report["results"]}
    assert kinds == {"golden", "alternate", "negative"}
    assert re.search(r"\[\s*1/\d+\] ok", done.stderr), "progress is shown while it runs"


def _copy_task(tmp_path: Path, task_id: str) -> Path:
    root = tmp_path / "tasks"
    shutil.copytree(TASKS / task_id, root / task_id)
    return root


def test_a_broken_golden_fails_verification(tmp_path: Path) -> None:
    root = _copy_task(tmp_path, "v2-01-basic-tool-server")
    server = root / "v2-01-basic-tool-server" / "golden" / "server.py"
    server.write_text(server.read_text().replace("return a + b", "return a + b + 1"))
    done = _verify("--task", "v2-01-basic-tool-server", tasks_dir=root)
    assert done.returncode == 1
    assert "golden:golden expected pass, got contract.calls" in done.stderr


def test_a_fixed_negative_fails_verification(tmp_path: Path) -> None:
    root = _copy_task(tmp_path, "v2-01-basic-tool-server")
    task = root / "v2-01-basic-tool-server"
    shutil.copy(task / "golden" / "server.py", task / "negatives" / "wrong-sum" / "server.py")
    done = _verify("--task", "v2-01-basic-tool-server", tasks_dir=root)
    assert done.returncode == 1
    assert "negative:wrong-sum expected contract.calls, got pass" in done.stderr


def test_a_negative_failing_at_another_stage_fails_verification(tmp_path: Path) -> None:
    root = _copy_task(tmp_path, "v2-01-basic-tool-server")
    declaration = root / "v2-01-basic-tool-server" / "negatives" / "wrong-sum" / "negative.json"
    declaration.write_text(json.dumps({"failureCode": "contract.tools", "why": "declared at the wrong stage"}))
    done = _verify("--task", "v2-01-basic-tool-server", tasks_dir=root)
    assert done.returncode == 1
    assert "negative:wrong-sum expected contract.tools, got contract.calls" in done.stderr


def test_a_malformed_task_is_reported_and_fails_verification(tmp_path: Path) -> None:
    root = _copy_task(tmp_path, "v2-01-basic-tool-server")
    broken = root / "v2-99-broken"
    shutil.copytree(root / "v2-01-basic-tool-server", broken)
    contract = json.loads((broken / "task.json").read_text())
    contract["id"] = "v2-99-broken"
    contract["expectedTools"][0]["requiredProps"] = "a"
    (broken / "task.json").write_text(json.dumps(contract))
    done = _verify(tasks_dir=root)
    assert done.returncode == 1
    assert f"{broken / 'task.json'}: field 'expectedTools[0].requiredProps'" in done.stderr
    assert "7/7 solutions graded as declared" in done.stdout  # the healthy task was still verified
