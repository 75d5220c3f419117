// Alternate legitimate solution: MCPServer.fromOpenAPI generates getOrder and listOrders from openapi.json (read at run time); createOrder and cancelOrder, whose request bodies fromOpenAPI would nest in one `body` argument, are added by hand with their body fields as arguments.
import { readFileSync } from "node:fs";
import { MCPServer, type OpenAPIDocument } from "mcp-use";
import { z } from "zod";

const spec = JSON.parse(readFileSync("openapi.json", "utf8")) as OpenAPIDocument;
const baseUrl = (process.env.ORDERS_API_URL ?? "").replace(/\/+$/, "");

const server = MCPServer.fromOpenAPI({
  spec,
  baseUrl,
  name: "order-service",
  exclude: [{ operationId: "createOrder" }, { operationId: "cancelOrder" }],
});

async function post(path: string, body: Record<string, unknown>) {
  try {
    const response = await fetch(`${baseUrl}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) return { content: [{ type: "text" as const, text }], isError: true };
    const data = JSON.parse(text) as Record<string, unknown>;
    return { content: [{ type: "text" as const, text }], structuredContent: data };
  } catch (error) {
    return { content: [{ type: "text" as const, text: `order service request failed: ${String(error)}` }], isError: true };
  }
}

server.tool(
  {
    name: "createOrder",
    description: "Create an order (POST /orders).",
    inputSchema: z.object({
      customer: z.string(),
      items: z.array(z.object({ sku: z.enum(["WIDGET", "GADGET", "GIZMO"]), quantity: z.number().int().min(1) })).min(1),
    }),
  },
  async (body) => post("/orders", body),
);

server.tool(
  {
    name: "cancelOrder",
    description: "Cancel an order (POST /orders/{orderId}/cancel).",
    inputSchema: z.object({ orderId: z.string(), reason: z.string().optional() }),
  },
  async ({ orderId, reason }) => post(`/orders/${encodeURIComponent(orderId)}/cancel`, reason === undefined ? {} : { reason }),
);

await server.listen();
