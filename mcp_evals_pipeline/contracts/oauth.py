"""`oauth`: the server is an OAuth-protected resource; the harness runs a local identity provider."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from mcp_evals_pipeline.contracts.task_base import ContractModel


class OAuthSpec(ContractModel):
    backend: Literal["clerk", "okta"]
    frontend_api_url: str | None = None  # clerk only: exposed to the agent phase, never to grading
    scopes: list[str] = Field(default_factory=list)
