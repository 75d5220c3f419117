"""Building blocks shared by task.json and its feature sections: the model config and expectations."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

ExpectationType = Literal["contains", "not-contains", "number-equals", "equals", "one-of", "json-type", "text-equals",
                          "sorted", "length-equals", "parts-agree"]
# Where an expectation looks: "any" (the default) the structured content first, else the text; "structured" or
# "text" only that one, so a rule the prompt states about one form of the result is not met by the other form.
ResultPart = Literal["any", "structured", "text"]
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
    "one-of": "one-of",
    "oneOf": "one-of",
    "one_of": "one-of",
    "json-type": "json-type",
    "jsonType": "json-type",
    "text-equals": "text-equals",
    "textEquals": "text-equals",
    "text_equals": "text-equals",
    "sorted": "sorted",
    "parts-agree": "parts-agree",
    "partsAgree": "parts-agree",
    "length-equals": "length-equals",
    "lengthEquals": "length-equals",
    "length_equals": "length-equals",
}
# Types whose value is optional: `sorted` needs none, `length-equals` may take it from `valuePath` instead.
_VALUELESS: tuple[str, ...] = ("sorted", "length-equals", "parts-agree")

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

    requirements: list[str] = Field(default_factory=list, description="The requirement ids (the task's "
                                    "`requirements`) this element checks.")


class Expectation(ContractModel):
    """One assertion on the text of a tool result or a resource read.

    `number-equals` finds a number (at `path`, else the structured `result`, else the first number in the text);
    a value read from JSON must be a JSON number: "42" (a string) is not 42. `equals` compares the JSON value at
    `path` exactly (types included), `one-of` with one of the values listed; `json-type` checks the JSON type of
    the value at `path`. A path segment `*` stands for every item of an array (every key of an object): the
    expectation must hold at each (an empty array holds it), so "every ticket's status" is one expectation. `contains` /
    `not-contains` search the text, or with `path` the value there (a string as is, anything else as JSON).
    `text-equals`: the whole text, surrounding whitespace trimmed, is exactly `value` (case-sensitive unless
    `caseSensitive` is false): "the sum and nothing else". `sorted`: the array at `path` is ordered by `key` of its
    items (the items themselves without one), `order` ascending or descending, ties allowed. `length-equals`: the
    array at `path` has `value` items, or as many as the JSON integer at `valuePath` says. `parts-agree`: a result
    with both text and structured content holds the same JSON value in both ("if both, they hold the same object").
    `in` picks the part of the result looked at ("structured" / "text"; default "any"); with `ifPresent` a result
    without that part passes, so "structured content, if any, is X" is one expectation.
    """

    type: ExpectationType = Field(description="What is compared (see the model's description).")
    value: Any = Field(default=None, description="What it is compared with (the type says which JSON type).")
    path: str | None = Field(default=None, description='A dotted path into the structured content (or the JSON '
                             'text), e.g. "count" or "items.0.id"; a segment `*` means every item.')
    # contains / not-contains compare case-insensitively unless the task says otherwise: an agent that writes
    # "record R-1" where the prompt said "Record R-1" built a working server, and a contract that fails it
    # measures the marker, not the SDK. text-equals pins the text exactly, so there the default is sensitive.
    case_sensitive: bool | None = Field(default=None, description="Default: sensitive for text-equals only.")
    source: ResultPart = Field(default="any", alias="in", description="The part of the result looked at: any "
                               "(structured content, else the text), structured or text.")
    if_present: bool = Field(default=False, description="With `in`: a result without that part passes.")
    key: str | None = Field(default=None, description="sorted: the item field ordered by.")
    order: Literal["ascending", "descending"] = Field(default="ascending", description="sorted: the order.")
    value_path: str | None = Field(default=None, description="length-equals: the path of the JSON integer the "
                                   "length must equal.")

    @field_validator("type", mode="before")
    @classmethod
    def _normalize_type(cls, value: Any) -> Any:
        if isinstance(value, str) and value in _TYPE_SPELLINGS:
            return _TYPE_SPELLINGS[value]
        return value

    @model_validator(mode="after")
    def _value_matches_type(self) -> Expectation:
        if "value" not in self.model_fields_set and self.type not in _VALUELESS:
            raise ValueError(f"{self.type} needs a value")
        if self.type == "number-equals":
            if isinstance(self.value, bool) or not isinstance(self.value, int | float):
                raise ValueError("number-equals needs a numeric value")
        elif self.type in ("equals", "one-of", "json-type", "sorted", "length-equals"):
            if self.path is None:
                raise ValueError(f"{self.type} needs a path (use \"$\" for the whole JSON value)")
            if self.type == "one-of" and (not isinstance(self.value, list) or not self.value):
                raise ValueError("one-of needs a non-empty list of values")
            if self.type == "json-type" and self.value not in JSON_TYPES:
                raise ValueError(f"json-type value must be one of {', '.join(JSON_TYPES)}")
            if self.type == "sorted" and "value" in self.model_fields_set:
                raise ValueError("sorted takes no value (it orders by `key`, `order` ascending or descending)")
            if self.type == "length-equals" and (self.value is None) == (self.value_path is None):
                raise ValueError("length-equals needs exactly one of value (an integer) and valuePath")
            if self.type == "length-equals" and self.value is not None and (
                    isinstance(self.value, bool) or not isinstance(self.value, int) or self.value < 0):
                raise ValueError("length-equals value must be a non-negative integer")
        elif self.type == "parts-agree":
            if self.model_fields_set & {"value", "path", "source"}:
                raise ValueError("parts-agree compares the whole text with the whole structured content: no value, "
                                 "path or in")
        elif self.type == "text-equals":
            if not isinstance(self.value, str):
                raise ValueError("text-equals needs a string value")
            if self.path is not None:
                raise ValueError("text-equals compares the whole text and takes no path (use equals for a value)")
        elif not isinstance(self.value, str) or not self.value:
            raise ValueError(f"{self.type} needs a non-empty string value")
        if self.key is not None and self.type != "sorted":
            raise ValueError("key belongs to sorted")
        if self.value_path is not None and self.type != "length-equals":
            raise ValueError("valuePath belongs to length-equals")
        if self.if_present and self.source == "any":
            raise ValueError('ifPresent needs `in`: "structured" or "text" (the part that may be absent)')
        return self

    @property
    def sensitive(self) -> bool:
        """Compare case-sensitively? As declared, else only text-equals (the text is pinned exactly)."""
        return self.case_sensitive if self.case_sensitive is not None else self.type == "text-equals"


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


