// Alternate legitimate solution: the ticket store, apart from the MCP wiring; errors are thrown.
export type Status = "open" | "claimed" | "closed";

export interface Ticket {
  id: number;
  title: string;
  status: Status;
}

export class TicketNotFound extends Error {
  constructor(id: number) {
    super(`ticket ${id} not found`);
  }
}

export class TicketStore {
  private readonly tickets = new Map<number, Ticket>();
  private nextId = 1;

  create(title: string): Ticket {
    const ticket: Ticket = { id: this.nextId++, title, status: "open" };
    this.tickets.set(ticket.id, ticket);
    return { ...ticket };
  }

  active(): Ticket[] {
    return [...this.tickets.values()]
      .filter((ticket) => ticket.status !== "closed")
      .sort((a, b) => a.id - b.id)
      .map((ticket) => ({ ...ticket }));
  }

  claim(id: number): Ticket {
    const ticket = this.get(id);
    if (ticket.status !== "open") {
      throw new Error(`ticket ${id} is ${ticket.status}; only open tickets can be claimed`);
    }
    ticket.status = "claimed";
    return { ...ticket };
  }

  close(id: number): Ticket {
    const ticket = this.get(id);
    ticket.status = "closed";
    return { ...ticket };
  }

  private get(id: number): Ticket {
    const ticket = this.tickets.get(id);
    if (!ticket) throw new TicketNotFound(id);
    return ticket;
  }
}
