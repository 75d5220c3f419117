"""`views`: MCP Apps views, each a `ui://` HTML resource bound to the tool that renders it."""

from __future__ import annotations

from pydantic import Field

from mcp_evals_pipeline.contracts.task_base import ContractModel

APP_MIME = "text/html;profile=mcp-app"


class ViewBinding(ContractModel):
    tool: str
    resource_uri: str  # ui://...
    mime_type: str = APP_MIME
    contains: list[str] = Field(default_factory=list)  # strings the view's HTML must contain
