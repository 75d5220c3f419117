// Negative: reserve_stock rounds what is left with toFixed(0) and answers that string; every other number is an
// integer.
import { MCPServer, type CallToolResult } from "mcp-use";
import { z } from "zod";

interface Item {
  sku: string;
  name: string;
  stock: number;
}

// sku -> item; the stock levels change as tools are called.
const INVENTORY = new Map<string, Item>([
  ["coffee-mug", { sku: "coffee-mug", name: "Coffee Mug", stock: 8 }],
  ["desk-lamp", { sku: "desk-lamp", name: "Desk Lamp", stock: 2 }],
  ["notebook", { sku: "notebook", name: "Notebook", stock: 15 }],
]);

function findItem(sku: string): Item {
  const item = INVENTORY.get(sku);
  if (!item) throw new Error(`item ${sku} not found`);
  return item;
}

function checkQuantity(quantity: number): void {
  if (quantity < 1) throw new Error(`quantity must be at least 1 (got ${quantity})`);
}

function json(value: object): CallToolResult {
  return { content: [{ type: "text", text: JSON.stringify(value) }], structuredContent: { ...value } };
}

const server = new MCPServer({ name: "inventory", version: "1.0.0" });

server.tool(
  {
    name: "list_inventory",
    description: "List every item with its current stock.",
    inputSchema: z.object({}),
  },
  async () => json({ items: [...INVENTORY.values()].map((item) => ({ ...item })) }),
);

server.tool(
  {
    name: "get_stock",
    description: "Current stock of one item.",
    inputSchema: z.object({ sku: z.string().describe("The item's sku") }),
  },
  async ({ sku }) => {
    const item = findItem(sku);
    return json({ sku, stock: item.stock });
  },
);

server.tool(
  {
    name: "reserve_stock",
    description: "Take `quantity` units of an item out of stock.",
    inputSchema: z.object({
      sku: z.string().describe("The item's sku"),
      quantity: z.number().int().describe("How many units to reserve"),
    }),
  },
  async ({ sku, quantity }) => {
    checkQuantity(quantity);
    const item = findItem(sku);
    if (quantity > item.stock) {
      throw new Error(`insufficient stock for ${sku}: ${item.stock} left, ${quantity} requested`);
    }
    const left = (item.stock - quantity).toFixed(0);
    item.stock = Number(left);
    return json({ sku, reserved: quantity, stock: left });
  },
);

server.tool(
  {
    name: "restock",
    description: "Add `quantity` units of an item to stock.",
    inputSchema: z.object({
      sku: z.string().describe("The item's sku"),
      quantity: z.number().int().describe("How many units to add"),
    }),
  },
  async ({ sku, quantity }) => {
    checkQuantity(quantity);
    const item = findItem(sku);
    item.stock += quantity;
    return json({ sku, restocked: quantity, stock: item.stock });
  },
);

await server.listen(Number(process.env.PORT));
