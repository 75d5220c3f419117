"""`mcp-evals serve`: the project's own MCP server (authoring tasks through the grader's gate; reading results)."""
