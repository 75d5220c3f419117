// Stateful support-ticket queue served over MCP Streamable HTTP (mcp-use v2).
// All tickets live in this module's memory for the life of the process.
import { MCPServer, type CallToolResult } from "mcp-use";
import { z } from "zod";

type Status = "open" | "claimed" | "closed";
interface Ticket {
  id: number;
  title: string;
  status: Status;
}

const tickets = new Map<number, Ticket>();
let lastId = 0; // highest id ever assigned; never decreases

function ok(value: Record<string, unknown>): CallToolResult {
  return { content: [{ type: "text", text: JSON.stringify(value) }], structuredContent: value };
}

function fail(message: string): CallToolResult {
  return { content: [{ type: "text", text: message }], isError: true };
}

const snapshot = (t: Ticket) => ({ id: t.id, title: t.title, status: t.status });

const server = new MCPServer({ name: "ticket-queue", version: "1.0.0" });

server.tool(
  {
    name: "create_ticket",
    description: "Create a new open ticket and return it.",
    inputSchema: z.object({ title: z.string().describe("Ticket title") }),
  },
  async ({ title }) => {
    lastId += 1;
    const ticket: Ticket = { id: lastId, title, status: "open" };
    tickets.set(ticket.id, ticket);
    return ok(snapshot(ticket));
  },
);

server.tool(
  {
    name: "list_tickets",
    description: "List the tickets that are not closed, ordered by id.",
    inputSchema: z.object({}),
  },
  async () => {
    const active = [...tickets.values()]
      .filter((t) => t.status !== "closed")
      .map(snapshot); // Map keeps insertion order, i.e. id order
    return ok({ count: active.length, tickets: active });
  },
);

server.tool(
  {
    name: "claim_ticket",
    description: "Claim an open ticket.",
    inputSchema: z.object({ id: z.int().describe("Ticket id") }),
  },
  async ({ id }) => {
    const ticket = tickets.get(id);
    if (!ticket) return fail(`ticket ${id} not found`);
    if (ticket.status !== "open") return fail(`ticket ${id} is ${ticket.status}, only open tickets can be claimed`);
    const claimed: Ticket = { ...ticket, status: "claimed" };
    tickets.delete(id);
    tickets.set(id, claimed);
    return ok(snapshot(claimed));
  },
);

server.tool(
  {
    name: "close_ticket",
    description: "Close an open or claimed ticket (closing a closed ticket returns it unchanged).",
    inputSchema: z.object({ id: z.int().describe("Ticket id") }),
  },
  async ({ id }) => {
    const ticket = tickets.get(id);
    if (!ticket) return fail(`ticket ${id} not found`);
    ticket.status = "closed";
    return ok(snapshot(ticket));
  },
);

await server.listen(Number(process.env.PORT), { host: "127.0.0.1" });
