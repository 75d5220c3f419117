"""`upstream`: a local HTTP service the server's tools must call, started and recorded by the grader."""

from __future__ import annotations

from pydantic import Field

from mcp_evals_pipeline.contracts.task_base import ContractModel


class ExpectedRequest(ContractModel):
    method: str
    path: str  # a regular expression matched against the request path
    min_count: int = 1


class UpstreamSpec(ContractModel):
    service: str  # which bundled fake to run (e.g. "orders")
    env: str = "UPSTREAM_URL"  # the variable that carries its base URL to the server
    expect_requests: list[ExpectedRequest] = Field(default_factory=list)
