"""Building blocks shared by task.json and its feature sections: the model config and expectations."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

ExpectationType = Literal["contains", "not-contains", "number-equals", "equals", "json-type"]
JsonType = Literal["string", "integer", "number", "boolean", "array", "object", "null"]
# The longest a contract may make the grader wait on one call (or one start): a contract is read from a task
# directory anyone may submit, and an unbounded wait holds a grading slot (and its box) for as long as it says.
MAX_WAIT_SECONDS = 300.0

# Spellings accepted for an expectation type; the dashed form is canonical (the earlier harness's).
_TYPE_SPELLINGS: dict[str, ExpectationType] = {
    "contains": "contains",
    "not-contains": "not-contains",
    "notContains": "not-contains",
    "not_contains": "not-contains",
    "number-equals": "number-equals",
    "numberEquals": "number-equals",
    "number_equals": "number-equals",
    "equals": "equals",
    "json-type": "json-type",
    "jsonType": "json-type",
}

# The kinds of gap a lenient or careless implementation leaves and that a contract must probe wherever they apply
# (tests/test_requirement_coverage.py): a requirement names the kinds it covers, a negative the kind it commits.
GapKind = Literal[
    "coerced-argument",  # an argument of the wrong JSON type (e.g. "2" for an integer) is accepted, not rejected
    "numeric-string",  # a number the prompt promises is returned as a numeric string
    "negative-confirmation",  # a decline / false on a confirmation path is taken as a yes
    "requested-field-type",  # an input_required round asks for a field of the wrong type (or not at all)
    "case-pinned",  # text whose case the prompt pins comes back in another case
    "bound-per-tool",  # a bound (limit, validation) the prompt names for several tools holds on only some
    "relay-query",  # a relay drops or alters the query parameters or body it must forward upstream
    "other-user",  # an identity answer that ignores who the token belongs to
    "lifecycle-reuse",  # an id (or other lifecycle value) is reused after a delete or close
]


class ContractModel(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, alias_generator=to_camel, frozen=True)


class Covers(ContractModel):
    """A contract element that checks requirements: the ids (of the task's `requirements`) it tests."""

    requirements: list[str] = Field(default_factory=list)


class Expectation(ContractModel):
    """One assertion on the text of a tool result or a resource read.

    `number-equals` finds a number (at `path`, else the structured `result`, else the first number in the text);
    a value read from JSON must be a JSON number: "42" (a string) is not 42. `equals` compares the JSON value at
    `path` exactly (types included); `json-type` checks the JSON type of the value at `path`. `contains` /
    `not-contains` search the text, or with `path` the value there (a string as is, anything else as JSON).
    """

    type: ExpectationType
    value: Any
    # A dotted path into the structured content (or the JSON text), e.g. "count" or "items.0.id".
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
        elif self.type in ("equals", "json-type"):
            if self.path is None:
                raise ValueError(f"{self.type} needs a path (use \"$\" for the whole JSON value)")
            if self.type == "json-type" and self.value not in JSON_TYPES:
                raise ValueError(f"json-type value must be one of {', '.join(JSON_TYPES)}")
        elif not isinstance(self.value, str) or not self.value:
            raise ValueError(f"{self.type} needs a non-empty string value")
        return self


JSON_TYPES: tuple[str, ...] = ("string", "integer", "number", "boolean", "array", "object", "null")


def json_type_of(value: Any) -> str:
    """The JSON Schema type name of a decoded JSON value (an integral float such as 2.0 is an integer there too)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def json_type_matches(value: Any, wanted: str) -> bool:
    got = json_type_of(value)
    return got == wanted or (wanted == "number" and got == "integer")


def as_list(value: Any) -> Any:
    """`expect` may be one expectation (the earlier harness's shape) or a list of them."""
    if value is None:
        return []
    if isinstance(value, dict):
        return [value]
    return value


