// Inventory MCP server: stock levels for a small shop, over Streamable HTTP (mcp-use).
import { MCPServer, type CallToolResult } from "mcp-use";
import { args } from "./args.js";

class UserError extends Error {}

class Inventory {
  // Insertion order is the table order.
  private readonly items = new Map<string, { sku: string; name: string; stock: number }>([
    ["coffee-mug", { sku: "coffee-mug", name: "Coffee Mug", stock: 8 }],
    ["desk-lamp", { sku: "desk-lamp", name: "Desk Lamp", stock: 2 }],
    ["notebook", { sku: "notebook", name: "Notebook", stock: 15 }],
  ]);

  list() {
    return [...this.items.values()].map(({ sku, name, stock }) => ({ sku, name, stock }));
  }

  stockOf(sku: string): number {
    return this.require(sku).stock;
  }

  reserve(sku: string, quantity: number): number {
    const item = this.require(sku);
    Inventory.checkQuantity(quantity);
    if (quantity > item.stock) {
      throw new UserError(`insufficient stock for ${sku}: ${item.stock} available, ${quantity} requested`);
    }
    item.stock -= quantity;
    return item.stock;
  }

  restock(sku: string, quantity: number): number {
    const item = this.require(sku);
    Inventory.checkQuantity(quantity);
    item.stock += quantity;
    return item.stock;
  }

  private require(sku: string) {
    const item = this.items.get(sku);
    if (item === undefined) throw new UserError(`item ${sku} not found`);
    return item;
  }

  private static checkQuantity(quantity: number) {
    if (quantity < 1) throw new UserError(`quantity must be a positive integer, got ${quantity}`);
  }
}

const inventory = new Inventory();

/** Run an operation; a UserError becomes an isError tool result, anything else a JSON text result. */
function run(op: () => object): CallToolResult {
  try {
    return { content: [{ type: "text", text: JSON.stringify(op()) }] };
  } catch (err) {
    if (err instanceof UserError) return { content: [{ type: "text", text: err.message }], isError: true };
    throw err;
  }
}

const server = new MCPServer({ name: "inventory", version: "1.1.0" });

server.tool({ name: "list_inventory", description: "List every item with its current stock.", inputSchema: args({}) }, () =>
  run(() => ({ items: inventory.list() })),
);

server.tool(
  { name: "get_stock", description: "Current stock of one item.", inputSchema: args({ sku: "string" }) },
  ({ sku }) => run(() => ({ sku, stock: inventory.stockOf(sku) })),
);

server.tool(
  {
    name: "reserve_stock",
    description: "Take `quantity` units of an item out of stock.",
    inputSchema: args({ sku: "string", quantity: "integer" }),
  },
  ({ sku, quantity }) => run(() => ({ sku, reserved: quantity, stock: inventory.reserve(sku, quantity) })),
);

server.tool(
  {
    name: "restock",
    description: "Add `quantity` units of an item to stock.",
    inputSchema: args({ sku: "string", quantity: "integer" }),
  },
  ({ sku, quantity }) => run(() => ({ sku, restocked: quantity, stock: inventory.restock(sku, quantity) })),
);

await server.listen(Number(process.env.PORT));
