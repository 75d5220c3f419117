// Negative: re-implements the order service in memory (same ids, prices, statuses and error messages) instead of relaying to ORDERS_API_URL.
import { MCPServer } from "mcp-use";
import { z } from "zod";

type Order = {
  id: string;
  customer: string;
  items: { sku: string; quantity: number; unitPrice: number; lineTotal: number }[];
  total: number;
  currency: string;
  status: string;
  cancelReason: string | null;
};

const PRICES: Record<string, number> = { WIDGET: 1250, GADGET: 2150, GIZMO: 899 };
const orders = new Map<string, Order>();
let next = 1001;

const server = new MCPServer({ name: "order-service", version: "1.0.0" });

const ok = (data: Record<string, unknown>) => ({
  content: [{ type: "text" as const, text: JSON.stringify(data) }],
  structuredContent: data,
});
const error = (text: string) => ({ content: [{ type: "text" as const, text }], isError: true });

server.tool(
  {
    name: "createOrder",
    inputSchema: z.object({
      customer: z.string(),
      items: z.array(z.object({ sku: z.string(), quantity: z.number().int() })),
    }),
  },
  async ({ customer, items }) => {
    if (items.some((item) => !(item.sku in PRICES) || item.quantity < 1)) return error("invalid items");
    const lines = items.map(({ sku, quantity }) => ({ sku, quantity, unitPrice: PRICES[sku], lineTotal: PRICES[sku] * quantity }));
    const order: Order = {
      id: `ord_${next++}`,
      customer,
      items: lines,
      total: lines.reduce((sum, line) => sum + line.lineTotal, 0),
      currency: "USD",
      status: "pending",
      cancelReason: null,
    };
    orders.set(order.id, order);
    return ok(order);
  },
);

server.tool({ name: "getOrder", inputSchema: z.object({ orderId: z.string() }) }, async ({ orderId }) => {
  const order = orders.get(orderId);
  return order ? ok(order) : error(`order ${orderId} not found`);
});

server.tool(
  { name: "listOrders", inputSchema: z.object({ status: z.string().optional(), customer: z.string().optional() }) },
  async ({ status, customer }) => {
    if (status !== undefined && status !== "pending" && status !== "cancelled") {
      return error("status must be one of pending, cancelled");
    }
    const found = [...orders.values()].filter(
      (o) => (status === undefined || o.status === status) && (customer === undefined || o.customer === customer),
    );
    return ok({ orders: found, count: found.length });
  },
);

server.tool(
  { name: "cancelOrder", inputSchema: z.object({ orderId: z.string(), reason: z.string().optional() }) },
  async ({ orderId, reason }) => {
    const order = orders.get(orderId);
    if (!order) return error(`order ${orderId} not found`);
    if (order.status === "cancelled") return error(`order ${orderId} is already cancelled`);
    order.status = "cancelled";
    order.cancelReason = reason ?? null;
    return ok(order);
  },
);

await server.listen(Number(process.env.PORT));
