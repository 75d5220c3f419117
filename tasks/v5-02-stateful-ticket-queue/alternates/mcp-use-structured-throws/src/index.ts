// Alternate legitimate solution: mcp-use with outputSchemas and structured content only (no text block), errors
// thrown from the handlers, the queue in its own module, entry src/index.ts.
import { MCPServer } from "mcp-use";
import { z } from "zod";
import { Queue } from "./queue.js";

const queue = new Queue();
const ticketSchema = z.object({ id: z.int(), title: z.string(), status: z.enum(["open", "claimed", "closed"]) });
const idInput = z.object({ id: z.int().describe("Ticket id") });

const server = new MCPServer({ name: "ticket-queue", version: "0.2.0" });

server.tool(
  { name: "create_ticket", inputSchema: z.object({ title: z.string() }), outputSchema: ticketSchema },
  async ({ title }) => ({ content: [], structuredContent: queue.create(title) }),
);

server.tool(
  {
    name: "list_tickets",
    inputSchema: z.object({}),
    outputSchema: z.object({ count: z.int(), tickets: z.array(ticketSchema) }),
  },
  async () => {
    const tickets = queue.active();
    return { content: [], structuredContent: { count: tickets.length, tickets } };
  },
);

server.tool(
  { name: "claim_ticket", inputSchema: idInput, outputSchema: ticketSchema },
  async ({ id }) => ({ content: [], structuredContent: queue.claim(id) }),
);

server.tool(
  { name: "close_ticket", inputSchema: idInput, outputSchema: ticketSchema },
  async ({ id }) => ({ content: [], structuredContent: queue.close(id) }),
);

await server.listen();
