"""`mcp-evals serve`: the project's own MCP server (authoring tasks through the grader's gate; reading results).

The two settings the command line names too live here, so the CLI reads them without importing the server."""

TOKEN_ENV = "MCP_EVALS_SERVE_TOKEN"  # the bearer token of --http
DEFAULT_PORT = 8719
