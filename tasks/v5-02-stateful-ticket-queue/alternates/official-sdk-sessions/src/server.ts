// Alternate legitimate solution: the official TypeScript SDK with stateful Streamable HTTP sessions on node:http.
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { TicketStore, type Ticket } from "./ticket-store.js";

// One store for the whole process: every session sees the same tickets.
const store = new TicketStore();
const transports = new Map<string, StreamableHTTPServerTransport>();

function json(value: Ticket | { count: number; tickets: Ticket[] }): CallToolResult {
  return { content: [{ type: "text", text: JSON.stringify(value) }], structuredContent: { ...value } };
}

function buildServer(): McpServer {
  const server = new McpServer({ name: "ticket-queue", version: "1.0.0" });
  server.registerTool(
    "create_ticket",
    { description: "Create a new open ticket.", inputSchema: { title: z.string() } },
    async ({ title }) => json(store.create(title)),
  );
  server.registerTool(
    "list_tickets",
    { description: "List the tickets that are not closed, with their count." },
    async () => {
      const tickets = store.active();
      return json({ count: tickets.length, tickets });
    },
  );
  server.registerTool(
    "claim_ticket",
    { description: "Claim an open ticket.", inputSchema: { id: z.number().int() } },
    async ({ id }) => json(store.claim(id)),
  );
  server.registerTool(
    "close_ticket",
    { description: "Close an open or claimed ticket.", inputSchema: { id: z.number().int() } },
    async ({ id }) => json(store.close(id)),
  );
  return server;
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  return text ? JSON.parse(text) : undefined;
}

function badRequest(res: ServerResponse, message: string): void {
  res.writeHead(400, { "content-type": "application/json" });
  res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message }, id: null }));
}

const http = createServer(async (req, res) => {
  if (new URL(req.url ?? "/", "http://localhost").pathname !== "/mcp") {
    res.writeHead(404).end();
    return;
  }
  const sessionId = req.headers["mcp-session-id"];
  const existing = typeof sessionId === "string" ? transports.get(sessionId) : undefined;
  if (existing) {
    await existing.handleRequest(req, res);
    return;
  }
  if (req.method !== "POST") {
    badRequest(res, "no valid session");
    return;
  }
  let body: unknown;
  try {
    body = await readBody(req);
  } catch {
    badRequest(res, "invalid JSON");
    return;
  }
  if (sessionId !== undefined || !isInitializeRequest(body)) {
    badRequest(res, "no valid session");
    return;
  }
  const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    onsessioninitialized: (id) => {
      transports.set(id, transport);
    },
  });
  transport.onclose = () => {
    if (transport.sessionId) transports.delete(transport.sessionId);
  };
  await buildServer().connect(transport);
  await transport.handleRequest(req, res, body);
});

const port = Number(process.env.PORT ?? 3000);
http.listen(port, "127.0.0.1", () => {
  console.log(`ticket queue MCP server on http://127.0.0.1:${port}/mcp`);
});
