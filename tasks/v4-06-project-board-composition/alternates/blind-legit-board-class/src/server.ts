import { MCPServer, type CallToolResult, type ReadResourceResult } from "mcp-use";
import { z } from "zod";
import { Board, IssueNotFoundError } from "./board.js";

const board = new Board();
const server = new MCPServer({ name: "project-board", version: "0.2.0" });

const text = (value: unknown): CallToolResult => ({ content: [{ type: "text", text: JSON.stringify(value) }] });
const json = (uri: URL, value: unknown): ReadResourceResult => ({
  contents: [{ uri: uri.href, mimeType: "application/json", text: JSON.stringify(value) }],
});

// Tool handlers throw on failure; mcp-use reports a thrown Error as an isError result.
server.tool(
  { name: "create_issue", description: "Open a new issue", inputSchema: z.object({ title: z.string() }) },
  ({ title }) => text(board.create(title)),
);
server.tool(
  {
    name: "assign_issue",
    description: "Set the assignee of an issue",
    inputSchema: z.object({ id: z.number().int(), assignee: z.string() }),
  },
  ({ id, assignee }) => text(board.assign(id, assignee)),
);
server.tool(
  { name: "resolve_issue", description: "Resolve an issue", inputSchema: z.object({ id: z.number().int() }) },
  ({ id }) => text(board.resolve(id)),
);

server.resource(
  { name: "summary", uri: "board://summary", mimeType: "application/json", title: "Board summary" },
  (uri) => json(uri, board.summary()),
);

server.resourceTemplate(
  { name: "issue", uriTemplate: "issue://{id}", mimeType: "application/json", title: "Issue" },
  (uri, params) => {
    const raw = String(params.id);
    const id = Number(raw);
    // Resource reads must fail at the protocol level: a thrown error becomes a JSON-RPC error.
    if (raw.trim() === "" || !Number.isInteger(id)) throw new IssueNotFoundError(raw);
    return json(uri, board.get(id));
  },
);

await server.listen();
