// Negative: tickets carry their id as a numeric string.
import { MCPServer, type CallToolResult } from "mcp-use";
import { z } from "zod";

type Status = "open" | "claimed" | "closed";
interface Ticket {
  id: number;
  title: string;
  status: Status;
}

// Shared by every call for the life of the process.
const tickets = new Map<number, Ticket>();
let nextId = 1;

function wire(t: Ticket) {
  return { ...t, id: String(t.id) };
}

function ok(value: object): CallToolResult {
  return {
    content: [{ type: "text", text: JSON.stringify(value) }],
    structuredContent: { ...value },
  };
}

function fail(message: string): CallToolResult {
  return { content: [{ type: "text", text: message }], isError: true };
}

const server = new MCPServer({ name: "ticket-queue", version: "1.0.0" });

server.tool(
  {
    name: "create_ticket",
    description: "Create a new open ticket and return it.",
    inputSchema: z.object({ title: z.string().describe("What the ticket is about") }),
  },
  async ({ title }) => {
    const ticket: Ticket = { id: nextId++, title, status: "open" };
    tickets.set(ticket.id, ticket);
    return ok(wire(ticket));
  },
);

server.tool(
  {
    name: "list_tickets",
    description: "List the tickets that are not closed, ordered by id, with their count.",
    inputSchema: z.object({}),
  },
  async () => {
    const active = [...tickets.values()].filter((t) => t.status !== "closed").sort((a, b) => a.id - b.id);
    return ok({ count: active.length, tickets: active.map(wire) });
  },
);

server.tool(
  {
    name: "claim_ticket",
    description: "Claim an open ticket.",
    inputSchema: z.object({ id: z.number().int().describe("The ticket id") }),
  },
  async ({ id }) => {
    const ticket = tickets.get(id);
    if (!ticket) return fail(`ticket ${id} not found`);
    if (ticket.status !== "open") return fail(`ticket ${id} is ${ticket.status}, only open tickets can be claimed`);
    ticket.status = "claimed";
    return ok(wire(ticket));
  },
);

server.tool(
  {
    name: "close_ticket",
    description: "Close an open or claimed ticket.",
    inputSchema: z.object({ id: z.number().int().describe("The ticket id") }),
  },
  async ({ id }) => {
    const ticket = tickets.get(id);
    if (!ticket) return fail(`ticket ${id} not found`);
    if (ticket.status === "closed") return fail(`ticket ${id} is already closed`);
    ticket.status = "closed";
    return ok(wire(ticket));
  },
);

await server.listen(Number(process.env.PORT));
