"""`mcp-evals compare` and its statistics on hand-computed cases: flipped cells with their failing checks, new and
fixed failure codes, the pass-rate change with Newcombe's interval, the exact sign test over tasks (a tie and an
all-pass cell included) and the trials needed to see a 10-point change."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcp_evals_pipeline.reporting import stats
from mcp_evals_pipeline.reporting.compare import CompareError, Side, compare, render
from mcp_evals_pipeline.store import TrialStore

from .test_sql_models import NS, _trial


def test_sign_test_by_hand() -> None:
    # 3 up, 1 down, 1 tie, 1 side without valid trials: n = 4, P(X <= 1) = (1 + 4) / 16, two-sided 10/16.
    result = stats.sign_test([1 / 3, 2 / 3, 0.0, -1 / 3, None, 1.0])
    assert (result.positive, result.negative, result.ties, result.p_value) == (3, 1, 1, 0.625)
    # All six up: 2 / 2^6.
    assert stats.sign_test([0.1] * 6).p_value == 2 / 64
    # Only ties (two all-pass cells): nothing to test, and it says so.
    tied = stats.sign_test([0.0, 0.0])
    assert tied.p_value is None and "nothing to test" in tied.describe()


def test_trials_to_detect_by_hand() -> None:
    # p1 = 0.5 -> p2 = 0.4, mean 0.45: (1.959964 * sqrt(0.495) + 0.841621 * sqrt(0.49))^2 / 0.01 = 387.3 -> 388
    assert stats.trials_to_detect(0.5) == 388
    # p1 = 0.9 -> 0.8, mean 0.85: (1.959964 * sqrt(0.255) + 0.841621 * 0.5)^2 / 0.01 = 198.96 -> 199
    assert stats.trials_to_detect(0.9) == 199
    # An all-pass cell: p1 = 1.0 -> 0.9, mean 0.95: (1.959964 * sqrt(0.095) + 0.841621 * 0.3)^2 / 0.01 = 73.4 -> 74
    assert stats.trials_to_detect(1.0) == 74 == stats.trials_to_detect(0.0)
    assert stats.trials_to_detect(None) is None


def test_newcombe_by_hand() -> None:
    # 8/12 -> 9/11 with their Wilson bounds (z = 1.96): 0.390618-0.861882 and 0.523014-0.948633.
    a, b = (8 / 12, 0.390618, 0.861882), (9 / 11, 0.523014, 0.948633)
    diff = stats.newcombe(a, b)
    assert diff.delta == pytest.approx(9 / 11 - 8 / 12)
    assert diff.low == pytest.approx(9 / 11 - 8 / 12 - math.sqrt((9 / 11 - 0.523014) ** 2 + (0.861882 - 8 / 12) ** 2))
    assert diff.high == pytest.approx(9 / 11 - 8 / 12 + math.sqrt((0.948633 - 9 / 11) ** 2 + (8 / 12 - 0.390618) ** 2))
    assert diff.low < 0 < diff.high  # 3 tasks' worth of trials: the change is within the noise


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """Batch A1 (grader 1.0) and B1 (grader 1.1), codex, noskill+blank:

        t1  A: P P P            B: P F(tools) F(tools)     pass -> mixed   (down)
        t2  A: F(entry) x3      B: P P P                   fail -> pass    (up)
        t3  A: P P P            B: P P P                   an all-pass tie
        t4  A: P P F(call:add)  B: P P I(infra.agent)      mixed -> pass   (up; the invalid one leaves B's count)
        t5  A: P                (not in B: unpaired)
    """
    a = ("RA", "A1", "2026-11-02", "1.0")
    b = ("RB", "B1", "2026-11-04", "1.1")
    records = [_trial(*a, "t1", NS, i, "pass") for i in (1, 2, 3)]
    records += [_trial(*b, "t1", NS, 1, "pass"), _trial(*b, "t1", NS, 2, "fail", check="tools"),
                _trial(*b, "t1", NS, 3, "fail", check="tools")]
    records += [_trial(*a, "t2", NS, i, "fail", check="entry") for i in (1, 2, 3)]
    records += [_trial(*b, "t2", NS, i, "pass") for i in (1, 2, 3)]
    records += [_trial(*side, "t3", NS, i, "pass") for side in (a, b) for i in (1, 2, 3)]
    records += [_trial(*a, "t4", NS, 1, "pass"), _trial(*a, "t4", NS, 2, "pass"),
                _trial(*a, "t4", NS, 3, "fail", check="call:add:1")]
    records += [_trial(*b, "t4", NS, 1, "pass"), _trial(*b, "t4", NS, 2, "pass"),
                _trial(*b, "t4", NS, 3, "infra.agent")]
    records += [_trial(*a, "t5", NS, 1, "pass")]
    path = tmp_path / "evals.duckdb"
    TrialStore(path).record_trials(records)
    return path


def test_compare_two_batches_by_hand(db: Path) -> None:
    with TrialStore(db).connect() as con:
        result = compare(con, Side.parse("A1"), Side.parse("B1"))
    (head,) = result.headlines
    assert head.group == ("build", NS, "codex") and head.tasks == 4
    assert (head.before.passes, head.before.valid, head.after.passes, head.after.valid) == (8, 12, 9, 11)
    # t1 down, t2 and t4 up, t3 tied: n = 3, P(X <= 1) = 4/8, two-sided 1.0
    assert (head.sign.positive, head.sign.negative, head.sign.ties, head.sign.p_value) == (2, 1, 1, 1.0)
    assert head.change is not None and head.change.delta == pytest.approx(9 / 11 - 8 / 12)
    assert head.change.low == pytest.approx(stats.newcombe((8 / 12, 0.390618, 0.861882),
                                                           (9 / 11, 0.523014, 0.948633)).low, abs=1e-5)
    assert head.detect_before == stats.trials_to_detect(8 / 12)
    flips = {f.key[1]: (f.before.verdict, f.after.verdict, f.before.first_failing(), f.after.first_failing())
             for f in result.flips}
    assert flips == {
        "t1": ("pass", "mixed", "-", "tools (contract.tools) x2"),
        "t2": ("fail", "pass", "entry (contract.entry) x3", "-"),
        "t4": ("mixed", "pass", "call:add:1 (contract.calls)", "-"),
    }
    assert result.new_codes == {"contract.tools": 2}
    assert result.fixed_codes == {"contract.calls": 1, "contract.entry": 3}
    assert result.unpaired == [("build", "t5", NS, "codex")]
    assert result.invalid == (0, 1) and result.graders == ("1.0", "1.1")
    assert result.trial_changes == []  # two batches: trial numbers are not pairs
    text = render(result)
    assert "8/12 pass (67%) -> 9/11 pass (82%): +15 pts (95% " in text
    assert "sign test over tasks: 2 up, 1 down, 1 tied, two-sided p = 1" in text
    assert "| build | t1 | noskill+blank | codex | pass 3/3 | mixed 1/3 | - | tools (contract.tools) x2 |" in text
    assert "- new: `contract.tools` x2" in text and "- fixed: `contract.calls` x1, `contract.entry` x3" in text


def test_compare_cli_and_a_missing_batch(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_evals_pipeline.cli import main

    monkeypatch.setenv("MCP_EVALS_DB", str(db))
    done = CliRunner().invoke(main, ["compare", "A1", "B1", "--json"])
    assert done.exit_code == 0, done.output
    data = json.loads(done.output)
    assert data["headlines"][0]["signTest"] == {"up": 2, "down": 1, "tied": 1, "p": 1.0}
    assert [f["task"] for f in data["flipped"]] == ["t1", "t2", "t4"]
    missing = CliRunner().invoke(main, ["compare", "A1", "nope"])
    assert missing.exit_code == 2 and "no batch 'nope' (`mcp-evals batches` lists the 2 there are)" in missing.output
    with pytest.raises(CompareError):
        Side.parse("@1.0")
