"""`upstream`: a local HTTP service the server's tools must call, started and recorded by the grader.

The grader runs a fresh bundled fake (mcp_evals_pipeline/upstreams/) per grading, hands its base URL to the server
in the environment variable `env`, and after the calls checks `expectRequests` against what the fake recorded.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field, field_validator, model_validator

from mcp_evals_pipeline.contracts.task_base import ContractModel, Covers
from mcp_evals_pipeline.upstreams import check_service

# Variables the grader itself sets for the server: an upstream must never override them.
_RESERVED_ENV = frozenset({"PORT", "PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "SHELL", "PYTHONUNBUFFERED",
                           "PYTHONDONTWRITEBYTECODE"})


class ExpectedRequest(Covers):
    method: str
    # A regular expression the whole request path (without the query string) must match, e.g. "/orders/ord_1001".
    path: str
    # Query parameters the request must carry with exactly these values (others may be present too). A parameter
    # that must be absent is given as null.
    query: dict[str, str | None] | None = None
    # The JSON body the request must carry: every key given must be present with an equal value, types included
    # (a relay that turns 2 into "2" differs); keys not given are not checked.
    body: dict[str, Any] | None = None
    # The body must hold exactly the keys of `body`, no others; a request without a body counts as `{}` (the
    # prompts' "an empty JSON object, or no body": `{"reason": null}` is neither).
    exact_body: bool = False
    min_count: int = Field(default=1, ge=1)

    @model_validator(mode="after")
    def _exact_needs_body(self) -> ExpectedRequest:
        if self.exact_body and self.body is None:
            raise ValueError("exactBody needs a body (give {} for an empty one)")
        return self

    @field_validator("method")
    @classmethod
    def _upper(cls, value: str) -> str:
        if not re.fullmatch(r"[A-Za-z]+", value):
            raise ValueError(f"method {value!r} is not an HTTP method")
        return value.upper()

    @field_validator("path")
    @classmethod
    def _regex(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"path {value!r} is not a valid regex: {exc}") from exc
        return value


class UpstreamSpec(ContractModel):
    service: str  # which bundled fake to run (a key of mcp_evals_pipeline.upstreams.SERVICES, e.g. "orders")
    env: str = "UPSTREAM_URL"  # the variable that carries its base URL (http://127.0.0.1:<port>/<secret>) to the server
    # Checked after the calls; when empty, the server must still have sent the service at least one request.
    expect_requests: list[ExpectedRequest] = Field(default_factory=list)

    @field_validator("service")
    @classmethod
    def _known_service(cls, value: str) -> str:
        # Checked when the task loads, not when it is graded: a typo is the task's bug, not an infra failure.
        return check_service(value, "upstream service")

    @field_validator("env")
    @classmethod
    def _env_name(cls, value: str) -> str:
        if not re.fullmatch(r"[A-Z_][A-Z0-9_]*", value):
            raise ValueError(f"env {value!r} is not an upper-case environment variable name")
        if value in _RESERVED_ENV:
            raise ValueError(f"env {value!r} is set by the grader itself")
        return value
