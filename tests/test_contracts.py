"""task.json validation: the seed's shapes load, bad files name the file and the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_evals_pipeline.contracts.task import TaskContract
from mcp_evals_pipeline.grader.functional import unsupported_features
from mcp_evals_pipeline.tasks.catalog import TaskLoadError, discover_tasks, load_task, parse_contract

from .conftest import write_task

# Real task.json files of the earlier (TypeScript) harness, copied from shared/legacy_runs/_tasks/.
LEGACY_TASKS = Path(__file__).resolve().parent / "fixtures" / "legacy_tasks"


@pytest.mark.parametrize("path", sorted(LEGACY_TASKS.glob("*.json")), ids=lambda p: p.stem)
def test_earlier_harness_contracts_load(path: Path) -> None:
    contract = parse_contract(path)
    assert contract.effective_runtime == "node"  # their entries are .ts files
    assert contract.calls or contract.resource_reads
    # This grader has every stage they need (the node runtime, views): none is refused as unsupported.
    assert unsupported_features(contract) == []


def test_legacy_expectation_spellings_normalize() -> None:
    contract = TaskContract.model_validate({
        "title": "t", "entry": ["server.py"], "expectedTools": [{"name": "a"}],
        "calls": [{"tool": "a", "expect": [{"type": "notContains", "value": "x"},
                                           {"type": "numberEquals", "value": 2, "path": "count"}]}],
    })
    assert [e.type for e in contract.calls[0].expect] == ["not-contains", "number-equals"]
    assert contract.entry_candidates == ["server.py"]


@pytest.mark.parametrize(
    ("contract", "field", "message"),
    [
        ({"entryCandidates": ["s.py"]}, "title", "Field required"),
        ({"title": "t", "entryCandidates": []}, "entryCandidates", "at least 1"),
        ({"title": "t", "entryCandidates": ["s.py"], "expectedTool": []}, "expectedTool", "Extra inputs"),
        ({"title": "t", "entryCandidates": ["s.py"], "expectedTools": [{"name": "a"}],
          "calls": [{"tool": "a", "expect": {"type": "matches", "value": "x"}}]}, "calls[0].expect[0].type", "Input"),
        ({"title": "t", "entryCandidates": ["s.py"], "expectedTools": [{"name": "a"}],
          "calls": [{"tool": "a", "expect": {"type": "equals", "value": "x"}}]}, "calls[0].expect[0]", "needs a path"),
        ({"title": "t", "entryCandidates": ["s.py"], "expectedTools": [{"name": "a"}],
          "calls": [{"tool": "a", "requirements": ["sum"]}]}, "(root)", "not in requirements"),
        ({"title": "t", "entryCandidates": ["s.py"],
          "requirements": [{"id": "r", "text": "x", "checkedBy": ["calls"]}]},
         "requirements[0].checkedBy", "a call, read"),
        ({"title": "t", "entryCandidates": ["s.py"], "expectedTools": [{"name": "a"}],
          "calls": [{"tool": "a", "expect": {"type": "number-equals", "value": "two"}}]},
         "calls[0].expect[0]", "numeric"),
    ],
)
def test_malformed_contract_names_file_and_field(tmp_path: Path, contract: dict, field: str, message: str) -> None:
    path = tmp_path / "task.json"
    path.write_text(json.dumps(contract))
    with pytest.raises(TaskLoadError) as info:
        parse_contract(path)
    assert info.value.path == path
    assert info.value.field_path == field
    assert message in info.value.message
    assert str(path) in str(info.value) and field in str(info.value)


def test_cross_field_rules(tmp_path: Path) -> None:
    path = tmp_path / "task.json"
    path.write_text(json.dumps({"title": "t", "entryCandidates": ["s.py"], "expectedTools": [{"name": "a"}],
                                "calls": [{"tool": "b"}]}))
    with pytest.raises(TaskLoadError, match=r"calls\[0\]\.tool 'b' is not in expectedTools"):
        parse_contract(path)


def test_invalid_json_names_line(tmp_path: Path) -> None:
    path = tmp_path / "task.json"
    path.write_text('{"title": "t",\n "entryCandidates": [}')
    with pytest.raises(TaskLoadError, match="invalid JSON at line 2"):
        parse_contract(path)


def test_one_broken_task_never_hides_the_others(tmp_path: Path, minimal_contract: dict) -> None:
    write_task(tmp_path, "a-good", minimal_contract)
    write_task(tmp_path, "b-broken", {**minimal_contract, "calls": "nope"})
    write_task(tmp_path, "c-good", minimal_contract)
    neg = tmp_path / "c-good" / "negatives" / "undeclared"
    neg.mkdir(parents=True)
    (neg / "server.py").write_text("")
    tasks, errors = discover_tasks(tmp_path)
    assert [t.id for t in tasks] == ["a-good"]
    assert sorted(str(e.path) for e in errors) == [
        str(tmp_path / "b-broken" / "task.json"),
        str(neg / "negative.json"),
    ]


def test_task_ids_cannot_break_partition_keys(tmp_path: Path, minimal_contract: dict) -> None:
    with pytest.raises(TaskLoadError, match="may not contain"):
        load_task(write_task(tmp_path, "bad--id", minimal_contract))


def test_prompt_hash_changes_with_prompt_or_contract(tmp_path: Path, minimal_contract: dict) -> None:
    task_dir = write_task(tmp_path, "t1", minimal_contract)
    first = load_task(task_dir).prompt_hash
    (task_dir / "prompt.md").write_text("A prompt, edited.\n")
    second = load_task(task_dir).prompt_hash
    (task_dir / "task.json").write_text(json.dumps({**minimal_contract, "title": "edited"}))
    third = load_task(task_dir).prompt_hash
    assert len({first, second, third}) == 3 and all(len(h) == 12 for h in (first, second, third))
