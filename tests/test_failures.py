"""The failure vocabulary (contracts/failures.py): every code a grade can carry is one of its members."""

from __future__ import annotations

import re
from pathlib import Path

from mcp_evals_pipeline.contracts.failures import CODES, RETRYABLE, ContractCode, Infra, UsageCode, is_infra
from mcp_evals_pipeline.contracts.grade import TrialGrade
from mcp_evals_pipeline.contracts.ladder import LADDER

PACKAGE = Path(__file__).resolve().parent.parent / "mcp_evals_pipeline"


def test_every_stage_has_its_contract_code_and_infra_codes_are_apart() -> None:
    assert [c.value for c in ContractCode] == [s.failure_code for s in LADDER]
    assert all(is_infra(c) for c in Infra) and not any(is_infra(c) for c in ContractCode)
    assert set(Infra) >= RETRYABLE and {*Infra, *ContractCode, *UsageCode} == CODES
    assert not any(is_infra(c) for c in UsageCode)


def test_no_failure_code_is_spelled_out_anywhere_else_in_the_package() -> None:
    """One place for the vocabulary: a code written as a string literal elsewhere is a second place."""
    literal = re.compile(r"""["'](?:infra|contract|usage)\.[a-z_]+["']""")
    spelled = [f"{path.relative_to(PACKAGE)}:{n}" for path in PACKAGE.rglob("*.py")
               if path.name != "failures.py"
               for n, line in enumerate(path.read_text().splitlines(), 1)
               if literal.search(line.split("#", 1)[0])]
    assert spelled == []


def test_an_infra_grade_is_invalid_and_carries_the_grader_version() -> None:
    grade = TrialGrade.infra(Infra.SANDBOX, "no box", permanent=True)
    assert not grade.valid and grade.failure_code == "infra.sandbox" and grade.grader_version and grade.permanent
    assert TrialGrade.model_validate_json(grade.model_dump_json()).failure_code == Infra.SANDBOX
