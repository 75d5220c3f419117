// MCP front for the order service described in openapi.json. Every tool call is
// relayed as one HTTP request to $ORDERS_API_URL; nothing is stored or computed here.
import { MCPServer, type CallToolResult } from "mcp-use";
import { z } from "zod";

function baseUrl(): string {
  const url = process.env.ORDERS_API_URL;
  if (!url) throw new Error("ORDERS_API_URL is not set");
  return url.replace(/\/+$/, "");
}

async function callService(
  method: "GET" | "POST",
  path: string,
  options: { query?: Record<string, string | undefined>; body?: unknown } = {},
): Promise<CallToolResult> {
  const url = new URL(baseUrl() + path);
  for (const [key, value] of Object.entries(options.query ?? {})) {
    if (value !== undefined) url.searchParams.set(key, value);
  }
  const init: RequestInit = { method, headers: { accept: "application/json" } };
  if (options.body !== undefined) {
    init.headers = { ...init.headers, "content-type": "application/json" };
    init.body = JSON.stringify(options.body);
  }

  let response: Response;
  try {
    response = await fetch(url, init);
  } catch (err) {
    return { content: [{ type: "text", text: `order service unreachable: ${(err as Error).message}` }], isError: true };
  }
  const raw = await response.text();
  let data: unknown;
  try {
    data = raw === "" ? null : JSON.parse(raw);
  } catch {
    data = undefined;
  }

  if (!response.ok) {
    const message =
      data && typeof data === "object" && typeof (data as { error?: unknown }).error === "string"
        ? (data as { error: string }).error
        : raw || response.statusText;
    return { content: [{ type: "text", text: `order service error (HTTP ${response.status}): ${message}` }], isError: true };
  }
  if (data === undefined) {
    return { content: [{ type: "text", text: `order service returned invalid JSON: ${raw}` }], isError: true };
  }
  const result: CallToolResult = { content: [{ type: "text", text: raw }] };
  if (data !== null && typeof data === "object" && !Array.isArray(data)) {
    result.structuredContent = data as Record<string, unknown>;
  }
  return result;
}

const server = new MCPServer({ name: "order-service", version: "1.4.0" });

server.tool(
  {
    name: "createOrder",
    description: "Create a pending order for a customer (POST /orders). The service prices the items.",
    inputSchema: z.object({
      customer: z.string().describe("The customer's name."),
      items: z
        .array(
          z.object({
            sku: z.string().describe("The product: WIDGET, GADGET or GIZMO."),
            quantity: z.coerce.number().int().describe("How many units."),
          }),
        )
        .describe("Order lines, in order."),
    }),
  },
  ({ customer, items }) =>
    callService("POST", "/orders", {
      body: { customer, items: items.map(({ sku, quantity }) => ({ sku, quantity })) },
    }),
);

server.tool(
  {
    name: "getOrder",
    description: "Get one order (GET /orders/{orderId}).",
    inputSchema: z.object({ orderId: z.string().describe("The order id, e.g. ord_1001.") }),
    annotations: { readOnlyHint: true },
  },
  ({ orderId }) => callService("GET", `/orders/${encodeURIComponent(orderId)}`),
);

server.tool(
  {
    name: "listOrders",
    description: "List orders (GET /orders), optionally filtered by status and/or customer.",
    inputSchema: z.object({
      status: z.string().optional().describe("Only orders with this status: pending or cancelled."),
      customer: z.string().optional().describe("Only orders of this customer (exact match)."),
    }),
    annotations: { readOnlyHint: true },
  },
  ({ status, customer }) => callService("GET", "/orders", { query: { status, customer } }),
);

server.tool(
  {
    name: "cancelOrder",
    description: "Cancel a pending order (POST /orders/{orderId}/cancel), recording the optional reason.",
    inputSchema: z.object({
      orderId: z.string().describe("The order id, e.g. ord_1001."),
      reason: z.string().optional().describe("Why the order is cancelled."),
    }),
  },
  ({ orderId, reason }) =>
    callService("POST", `/orders/${encodeURIComponent(orderId)}/cancel`, {
      body: reason === undefined ? {} : { reason },
    }),
);

await server.listen(Number(process.env.PORT), { host: "127.0.0.1" });
