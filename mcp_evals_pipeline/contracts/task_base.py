"""Building blocks shared by task.json and its feature sections: the model config and expectations."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator, model_validator
from pydantic.alias_generators import to_camel

ExpectationType = Literal["contains", "not-contains", "number-equals"]

# Spellings accepted for an expectation type; the dashed form is canonical (the earlier harness's).
_TYPE_SPELLINGS: dict[str, ExpectationType] = {
    "contains": "contains",
    "not-contains": "not-contains",
    "notContains": "not-contains",
    "not_contains": "not-contains",
    "number-equals": "number-equals",
    "numberEquals": "number-equals",
    "number_equals": "number-equals",
}


class ContractModel(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, alias_generator=to_camel, frozen=True)


class Expectation(ContractModel):
    """One assertion on the text of a tool result or a resource read."""

    type: ExpectationType
    value: str | int | float
    # number-equals only: a dotted path into the structured content (or the JSON text), e.g. "count" or "items.0.id"
    path: str | None = None
    # contains / not-contains compare case-insensitively unless the task says otherwise: an agent that writes
    # "record R-1" where the prompt said "Record R-1" built a working server, and a contract that fails it
    # measures the marker, not the SDK.
    case_sensitive: bool = False

    @field_validator("type", mode="before")
    @classmethod
    def _normalize_type(cls, value: Any) -> Any:
        if isinstance(value, str) and value in _TYPE_SPELLINGS:
            return _TYPE_SPELLINGS[value]
        return value

    @model_validator(mode="after")
    def _value_matches_type(self) -> Expectation:
        if self.type == "number-equals":
            if isinstance(self.value, bool) or not isinstance(self.value, int | float):
                raise ValueError("number-equals needs a numeric value")
        else:
            if not isinstance(self.value, str) or not self.value:
                raise ValueError(f"{self.type} needs a non-empty string value")
            if self.path is not None:
                raise ValueError("path applies to number-equals only")
        return self


def as_list(value: Any) -> Any:
    """`expect` may be one expectation (the earlier harness's shape) or a list of them."""
    if value is None:
        return []
    if isinstance(value, dict):
        return [value]
    return value


