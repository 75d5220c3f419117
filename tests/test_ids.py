"""Ids that become paths are checked by one helper (mcp_evals_pipeline/ids.py) wherever they come in."""

from __future__ import annotations

import pytest

from mcp_evals_pipeline.ids import check_id
from mcp_evals_pipeline.trials import TrialSpec, parse_trial_key, run_id_for, trial_key

PLAIN = ["2026-11-25", "30859637568-1", "v2-01-basic-tool-server--noskill+blank--codex--2026-08-03T22-44-20",
         "noskill+blank", "gpt-4o-mini", "a_b.c=d@e,f:g"]
ESCAPING = ["", ".", "..", "../../etc", "a/b", "/abs", "a\\b", ".hidden", "-rf", "a b", "a\nb", "a\0b", "x" * 201]


@pytest.mark.parametrize("value", PLAIN)
def test_plain_ids_pass(value: str) -> None:
    assert check_id(value, "id") == value


@pytest.mark.parametrize("value", ESCAPING)
def test_ids_that_are_not_plain_names_are_refused_naming_what_they_are(value: str) -> None:
    with pytest.raises(ValueError, match="batch id"):
        check_id(value, "batch id")


def test_trial_specs_keys_and_run_ids_refuse_path_ids() -> None:
    base = {"condition": "noskill+blank", "trial": 1, "batch_date": "2026-11-25", "agent": "replay"}
    with pytest.raises(ValueError, match=r"task id '\.\./x' is not a plain name"):
        TrialSpec(task_id="../x", **base)
    with pytest.raises(ValueError, match="separator of trial keys"):
        TrialSpec(task_id="a--b", **base)
    with pytest.raises(ValueError, match="batch id"):
        TrialSpec(task_id="t", **{**base, "batch_id": "../../etc"})
    with pytest.raises(ValueError, match="batch date"):
        TrialSpec(task_id="t", **{**base, "batch_date": "../2026"})
    with pytest.raises(ValueError, match="condition"):
        TrialSpec(task_id="t", **{**base, "condition": "a/b"})
    with pytest.raises(ValueError, match="trial key"):
        parse_trial_key("../t--noskill+blank--t1")
    with pytest.raises(ValueError, match="batch id"):
        run_id_for("..", "replay", None)
    with pytest.raises(ValueError, match="run id"):
        run_id_for("b", "replay", "m\\odel")
    assert run_id_for("b", "openai", "org/model") == "b--openai--org_model"
    assert trial_key("t", "noskill+blank", 2) == "t--noskill+blank--t2" == TrialSpec(task_id="t", **{
        **base, "trial": 2}).key
