"""`mcp-evals serve`: the project's own MCP server (tools for authoring tasks and reading results)."""
