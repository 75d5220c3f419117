// Negative: a correct inventory server, rewritten on the official SDK instead of repaired on the one it was written with.
import { createServer } from "node:http";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

type Item = { sku: string; name: string; stock: number };

const items: Item[] = [
  { sku: "coffee-mug", name: "Coffee Mug", stock: 8 },
  { sku: "desk-lamp", name: "Desk Lamp", stock: 2 },
  { sku: "notebook", name: "Notebook", stock: 15 },
];

function ok(value: Record<string, unknown>): CallToolResult {
  return { content: [{ type: "text", text: JSON.stringify(value) }], structuredContent: value };
}

function fail(message: string): CallToolResult {
  return { content: [{ type: "text", text: message }], isError: true };
}

const quantity = z.number().int().min(1);

function buildServer(): McpServer {
  const server = new McpServer({ name: "inventory", version: "1.0.0" });
  server.registerTool("list_inventory", { description: "All items." }, async () => ok({ items: items.map((i) => ({ ...i })) }));
  server.registerTool("get_stock", { inputSchema: { sku: z.string() } }, async ({ sku }) => {
    const item = items.find((i) => i.sku === sku);
    return item ? ok({ sku, stock: item.stock }) : fail(`item ${sku} not found`);
  });
  server.registerTool("reserve_stock", { inputSchema: { sku: z.string(), quantity } }, async ({ sku, quantity }) => {
    const item = items.find((i) => i.sku === sku);
    if (!item) return fail(`item ${sku} not found`);
    if (quantity > item.stock) return fail(`insufficient stock for ${sku}`);
    item.stock -= quantity;
    return ok({ sku, reserved: quantity, stock: item.stock });
  });
  server.registerTool("restock", { inputSchema: { sku: z.string(), quantity } }, async ({ sku, quantity }) => {
    const item = items.find((i) => i.sku === sku);
    if (!item) return fail(`item ${sku} not found`);
    item.stock += quantity;
    return ok({ sku, restocked: quantity, stock: item.stock });
  });
  return server;
}

const http = createServer(async (req, res) => {
  if (new URL(req.url ?? "/", "http://localhost").pathname !== "/mcp" || req.method !== "POST") {
    res.writeHead(req.method === "POST" ? 404 : 405).end();
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

http.listen(Number(process.env.PORT), "127.0.0.1");
