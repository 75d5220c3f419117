// Alternate legitimate solution: rewritten around an Inventory class with mcp-use's object()/error() helpers;
// quantity >= 1 is enforced by the zod schema (.min(1)) instead of by hand.
import { MCPServer, error, object } from "mcp-use";
import { z } from "zod";
import { Inventory, type Outcome } from "./inventory.js";

const inventory = new Inventory();
const server = new MCPServer({ name: "inventory", version: "2.0.0" });

const sku = z.string().describe("Item sku, e.g. coffee-mug");
const quantity = z.number().int().min(1).describe("Units, at least 1");

function reply<T extends Record<string, unknown>>(outcome: Outcome<number>, shape: (stock: number) => T) {
  return outcome.ok ? object(shape(outcome.value)) : error(outcome.message);
}

server.tool({ name: "list_inventory", description: "All items, in catalogue order.", inputSchema: z.object({}) },
  async () => object({ items: inventory.list() }));

server.tool({ name: "get_stock", description: "Current stock of an item.", inputSchema: z.object({ sku }) },
  async (args) => reply(inventory.stockOf(args.sku), (stock) => ({ sku: args.sku, stock })));

server.tool(
  { name: "reserve_stock", description: "Reserve units of an item.", inputSchema: z.object({ sku, quantity }) },
  async (args) =>
    reply(inventory.reserve(args.sku, args.quantity), (stock) => ({ sku: args.sku, reserved: args.quantity, stock })),
);

server.tool(
  { name: "restock", description: "Add units of an item.", inputSchema: z.object({ sku, quantity }) },
  async (args) =>
    reply(inventory.restock(args.sku, args.quantity), (stock) => ({ sku: args.sku, restocked: args.quantity, stock })),
);

const port = Number.parseInt(process.env.PORT ?? "", 10);
if (!Number.isInteger(port)) throw new Error("PORT is not set");
await server.listen(port);
