import { MCPServer, type CallToolResult } from "mcp-use";
import { z } from "zod";
import { TicketQueue } from "./queue.js";

const queue = new TicketQueue();

const asJson = (value: unknown): CallToolResult => ({
  content: [{ type: "text", text: JSON.stringify(value, null, 2) }],
});

const ticketId = z.object({ id: z.number().int().describe("The ticket id (an integer)") });

const server = new MCPServer({
  name: "ticket-queue",
  version: "0.1.0",
  description: "A small in-memory support ticket queue",
});

server.tool(
  { name: "create_ticket", description: "Open a new ticket", inputSchema: z.object({ title: z.string() }) },
  ({ title }) => asJson(queue.create(title)),
);

server.tool({ name: "list_tickets", description: "Tickets that are open or claimed, by id" }, () => {
  const tickets = queue.active();
  return asJson({ count: tickets.length, tickets });
});

// Errors thrown in a callback reach the client as tool results with isError: true.
server.tool({ name: "claim_ticket", description: "Claim an open ticket", inputSchema: ticketId }, ({ id }) =>
  asJson(queue.claim(id)),
);

server.tool(
  { name: "close_ticket", description: "Close an open or claimed ticket", inputSchema: ticketId },
  ({ id }) => asJson(queue.close(id)),
);

const port = Number.parseInt(process.env.PORT ?? "", 10);
if (Number.isNaN(port)) throw new Error("set PORT");
await server.listen(port);
