export type TicketStatus = "open" | "claimed" | "closed";

export interface Ticket {
  readonly id: number;
  readonly title: string;
  readonly status: TicketStatus;
}

export class TicketNotFound extends Error {
  constructor(id: number) {
    super(`ticket ${id} not found`);
  }
}

/** In-memory ticket queue. Tickets are kept forever (closed ones too) in id order. */
export class TicketQueue {
  private readonly tickets: Ticket[] = [];
  private nextId = 1;

  create(title: string): Ticket {
    const ticket: Ticket = { id: this.nextId++, title, status: "open" };
    this.tickets.push(ticket);
    return ticket;
  }

  active(): Ticket[] {
    // Tickets are appended with increasing ids, so array order is id order.
    return this.tickets.filter((t) => t.status !== "closed");
  }

  claim(id: number): Ticket {
    const current = this.get(id);
    if (current.status !== "open") {
      throw new Error(`cannot claim ticket ${id}: it is ${current.status}`);
    }
    return this.replace({ ...current, status: "claimed" });
  }

  close(id: number): Ticket {
    const current = this.get(id);
    if (current.status === "closed") {
      throw new Error(`ticket ${id} is already closed`);
    }
    return this.replace({ ...current, status: "closed" });
  }

  private get(id: number): Ticket {
    const ticket = this.tickets.find((t) => t.id === id);
    if (!ticket) throw new TicketNotFound(id);
    return ticket;
  }

  private replace(ticket: Ticket): Ticket {
    const index = this.tickets.findIndex((t) => t.id === ticket.id);
    this.tickets[index] = ticket;
    return ticket;
  }
}
