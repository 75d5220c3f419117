// Alternate legitimate solution: the official TypeScript SDK (@modelcontextprotocol/sdk) on node:http, stateless,
// one McpServer per request over a module-level board; resource errors are McpErrors.
import { createServer } from "node:http";
import { McpServer, ResourceTemplate } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { ErrorCode, McpError, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

type Issue = { id: number; title: string; status: "open" | "resolved"; assignee: string | null };

const board: Issue[] = [];

function result(issue: Issue | undefined, id: number): CallToolResult {
  if (issue === undefined) return { content: [{ type: "text", text: `issue ${id} not found` }], isError: true };
  return { content: [{ type: "text", text: JSON.stringify(issue) }], structuredContent: { ...issue } };
}

function buildServer(): McpServer {
  const server = new McpServer({ name: "project-board", version: "1.0.0" });
  server.registerTool(
    "create_issue",
    { description: "Create a new open, unassigned issue.", inputSchema: { title: z.string() } },
    async ({ title }) => {
      const issue: Issue = { id: board.length + 1, title, status: "open", assignee: null };
      board.push(issue);
      return result(issue, issue.id);
    },
  );
  server.registerTool(
    "assign_issue",
    { description: "Assign an issue.", inputSchema: { id: z.number().int(), assignee: z.string() } },
    async ({ id, assignee }) => {
      const issue = board.find((i) => i.id === id);
      if (issue) issue.assignee = assignee;
      return result(issue, id);
    },
  );
  server.registerTool(
    "resolve_issue",
    { description: "Resolve an issue.", inputSchema: { id: z.number().int() } },
    async ({ id }) => {
      const issue = board.find((i) => i.id === id);
      if (issue) issue.status = "resolved";
      return result(issue, id);
    },
  );
  server.registerResource(
    "board-summary",
    "board://summary",
    { description: "Issue counts", mimeType: "application/json" },
    async (uri) => {
      const open = board.filter((i) => i.status === "open");
      const summary = {
        total: board.length,
        open: open.length,
        resolved: board.length - open.length,
        unassigned: open.filter((i) => i.assignee === null).length,
      };
      return { contents: [{ uri: uri.href, mimeType: "application/json", text: JSON.stringify(summary) }] };
    },
  );
  server.registerResource(
    "issue",
    new ResourceTemplate("issue://{id}", { list: undefined }),
    { description: "One issue", mimeType: "application/json" },
    async (uri, { id }) => {
      const issue = board.find((i) => String(i.id) === String(id));
      if (!issue) throw new McpError(ErrorCode.InvalidParams, `issue ${String(id)} not found`);
      return { contents: [{ uri: uri.href, mimeType: "application/json", text: JSON.stringify(issue) }] };
    },
  );
  return server;
}

const http = createServer(async (req, res) => {
  if (new URL(req.url ?? "/", "http://localhost").pathname !== "/mcp") {
    res.writeHead(404).end();
    return;
  }
  if (req.method !== "POST") {
    res.writeHead(405, { Allow: "POST" }).end();
    return;
  }
  const server = buildServer();
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  res.on("close", () => {
    void transport.close();
    void server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res);
});

const port = Number(process.env.PORT);
http.listen(port, "127.0.0.1", () => console.log(`project board MCP server on http://127.0.0.1:${port}/mcp`));
