// Negative: the items are an array updated immutably (drop the old item, append the new one), so every item whose
// stock changes moves to the end of list_inventory.
import { MCPServer, type CallToolResult } from "mcp-use";
import { z } from "zod";

interface Item {
  sku: string;
  name: string;
  stock: number;
}

// The items, replaced (never mutated) as tools change their stock.
let ITEMS: readonly Item[] = [
  { sku: "coffee-mug", name: "Coffee Mug", stock: 8 },
  { sku: "desk-lamp", name: "Desk Lamp", stock: 2 },
  { sku: "notebook", name: "Notebook", stock: 15 },
];

function findItem(sku: string): Item {
  const item = ITEMS.find((i) => i.sku === sku);
  if (!item) throw new Error(`item ${sku} not found`);
  return item;
}

function save(item: Item): Item {
  ITEMS = [...ITEMS.filter((i) => i.sku !== item.sku), item];
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
  async () => json({ items: ITEMS.map((item) => ({ ...item })) }),
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
    const saved = save({ ...item, stock: item.stock - quantity });
    return json({ sku, reserved: quantity, stock: saved.stock });
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
    const saved = save({ ...item, stock: item.stock + quantity });
    return json({ sku, restocked: quantity, stock: saved.stock });
  },
);

await server.listen(Number(process.env.PORT));
