// Negative: sends each item's quantity as a string ("2") in the createOrder body instead of the JSON integer it was given.
import { MCPServer } from "mcp-use";
import { z } from "zod";

type ToolResult = {
  content: { type: "text"; text: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
};

const server = new MCPServer({ name: "order-service", version: "1.0.0" });

function failure(text: string): ToolResult {
  return { content: [{ type: "text", text }], isError: true };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** One request to the order service: its JSON object on 2xx, else a tool error with its error message. */
async function relay(
  method: "GET" | "POST",
  path: string,
  options: { query?: Record<string, string | undefined>; body?: Record<string, unknown> } = {},
): Promise<ToolResult> {
  const base = process.env.ORDERS_API_URL;
  if (!base) return failure("ORDERS_API_URL is not set: the order service's base URL is unknown");
  const url = new URL(base.replace(/\/+$/, "") + path);
  for (const [name, value] of Object.entries(options.query ?? {})) {
    if (value !== undefined) url.searchParams.set(name, value);
  }
  let response: Response;
  try {
    response = await fetch(url, {
      method,
      headers: options.body ? { "content-type": "application/json" } : {},
      body: options.body ? JSON.stringify(options.body) : undefined,
    });
  } catch (error) {
    return failure(`could not reach the order service: ${String(error)}`);
  }
  const text = await response.text();
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    data = undefined;
  }
  if (!response.ok) {
    const message = isObject(data) && typeof data.error === "string" ? data.error : text;
    return failure(`order service answered ${response.status}: ${message}`);
  }
  if (!isObject(data)) return failure(`order service answered with a non-object body: ${text.slice(0, 200)}`);
  return { content: [{ type: "text", text: JSON.stringify(data) }], structuredContent: data };
}

server.tool(
  {
    name: "createOrder",
    description: "Create a pending order; the service assigns its id and computes its total (in cents).",
    inputSchema: z.object({
      customer: z.string().describe("The customer's name."),
      items: z
        .array(
          z.object({
            sku: z.string().describe("The product: WIDGET, GADGET or GIZMO."),
            quantity: z.number().int().describe("How many units."),
          }),
        )
        .describe("The ordered items."),
    }),
  },
  async ({ customer, items }) =>
    relay("POST", "/orders", { body: { customer, items: items.map(({ sku, quantity }) => ({ sku, quantity: String(quantity) })) } }),
);

server.tool(
  {
    name: "getOrder",
    description: "Get one order by id.",
    inputSchema: z.object({ orderId: z.string().describe("The order id, e.g. ord_1001.") }),
  },
  async ({ orderId }) => relay("GET", `/orders/${encodeURIComponent(orderId)}`),
);

server.tool(
  {
    name: "listOrders",
    description: "List orders in creation order, optionally only those with a status or of a customer.",
    inputSchema: z.object({
      status: z.string().optional().describe("pending or cancelled"),
      customer: z.string().optional().describe("An exact customer name."),
    }),
  },
  async ({ status, customer }) => relay("GET", "/orders", { query: { status, customer } }),
);

server.tool(
  {
    name: "cancelOrder",
    description: "Cancel a pending order, optionally with a reason.",
    inputSchema: z.object({
      orderId: z.string().describe("The order id, e.g. ord_1001."),
      reason: z.string().optional().describe("Why the order is cancelled."),
    }),
  },
  async ({ orderId, reason }) =>
    relay("POST", `/orders/${encodeURIComponent(orderId)}/cancel`, { body: reason === undefined ? {} : { reason } }),
);

await server.listen(Number(process.env.PORT));
