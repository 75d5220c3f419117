"""Agentic-readiness evals for MCP server SDKs."""
