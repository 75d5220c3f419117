// Alternate legitimate solution: the official TypeScript SDK (@modelcontextprotocol/sdk) on node:http, stateless, with the four operations as registered tools and one small relay helper.
import { createServer } from "node:http";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

const ORDERS = process.env.ORDERS_API_URL ?? "";

async function call(method: string, path: string, body?: object): Promise<CallToolResult> {
  try {
    const response = await fetch(ORDERS + path, {
      method,
      ...(body && { headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) }),
    });
    const data = (await response.json()) as Record<string, unknown>;
    if (!response.ok) {
      return { isError: true, content: [{ type: "text", text: String(data.error ?? `HTTP ${response.status}`) }] };
    }
    return { content: [{ type: "text", text: JSON.stringify(data) }], structuredContent: data };
  } catch (error) {
    return { isError: true, content: [{ type: "text", text: `order service unreachable: ${String(error)}` }] };
  }
}

function buildServer(): McpServer {
  const server = new McpServer({ name: "order-service", version: "1.0.0" });
  server.registerTool(
    "createOrder",
    {
      description: "Create an order.",
      inputSchema: {
        customer: z.string(),
        items: z.array(z.object({ sku: z.string(), quantity: z.number().int() })),
      },
    },
    async ({ customer, items }) => call("POST", "/orders", { customer, items }),
  );
  server.registerTool(
    "getOrder",
    { description: "Get an order.", inputSchema: { orderId: z.string() } },
    async ({ orderId }) => call("GET", `/orders/${encodeURIComponent(orderId)}`),
  );
  server.registerTool(
    "listOrders",
    { description: "List orders.", inputSchema: { status: z.string().optional(), customer: z.string().optional() } },
    async (args) => {
      const query = new URLSearchParams();
      if (args.status !== undefined) query.set("status", args.status);
      if (args.customer !== undefined) query.set("customer", args.customer);
      const qs = query.toString();
      return call("GET", qs ? `/orders?${qs}` : "/orders");
    },
  );
  server.registerTool(
    "cancelOrder",
    { description: "Cancel an order.", inputSchema: { orderId: z.string(), reason: z.string().optional() } },
    async ({ orderId, reason }) =>
      call("POST", `/orders/${encodeURIComponent(orderId)}/cancel`, reason === undefined ? undefined : { reason }),
  );
  return server;
}

const http = createServer(async (req, res) => {
  const path = new URL(req.url ?? "/", "http://localhost").pathname;
  if (path !== "/mcp") {
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

const port = Number(process.env.PORT ?? 3000);
http.listen(port, "127.0.0.1", () => console.log(`MCP server on http://127.0.0.1:${port}/mcp`));
