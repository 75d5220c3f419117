// Alternate legitimate solution: mcp-use with its response helpers (object/error), errors thrown from a Board
// class, structured tool results, src/index.ts as the entry.
import { MCPServer, error, object } from "mcp-use";
import { z } from "zod";
import { Board, IssueNotFound } from "./board.js";

const board = new Board();
const server = new MCPServer({ name: "board", version: "0.1.0", description: "A tiny issue board" });

function guarded<T extends Record<string, unknown>>(run: () => T) {
  try {
    return object(run());
  } catch (e) {
    if (e instanceof IssueNotFound) return error(e.message);
    throw e;
  }
}

server.tool(
  { name: "create_issue", inputSchema: z.object({ title: z.string() }) },
  async ({ title }) => object({ ...board.create(title) }),
);
server.tool(
  { name: "assign_issue", inputSchema: z.object({ id: z.number().int(), assignee: z.string() }) },
  async ({ id, assignee }) => guarded(() => ({ ...board.assign(id, assignee) })),
);
server.tool(
  { name: "resolve_issue", inputSchema: z.object({ id: z.number().int() }) },
  async ({ id }) => guarded(() => ({ ...board.resolve(id) })),
);

server.resource(
  { name: "summary", uri: "board://summary", mimeType: "application/json" },
  async () => object(board.summary()),
);
server.resourceTemplate(
  { name: "issue", uriTemplate: "issue://{id}", mimeType: "application/json" },
  async (_uri, { id }) => {
    const raw = Array.isArray(id) ? id.join(",") : id;
    if (!/^[1-9]\d*$/.test(raw)) throw new IssueNotFound(raw);
    return object({ ...board.get(Number(raw)) });
  },
);

await server.listen();
