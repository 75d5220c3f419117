// Alternate legitimate solution: the queue as a class; failures are thrown as Errors.
export type Status = "open" | "claimed" | "closed";

export interface Ticket {
  id: number;
  title: string;
  status: Status;
}

export class Queue {
  #tickets: Ticket[] = [];
  #lastId = 0;

  create(title: string): Ticket {
    this.#lastId += 1;
    const ticket: Ticket = { id: this.#lastId, title, status: "open" };
    this.#tickets.push(ticket);
    return { ...ticket };
  }

  active(): Ticket[] {
    return this.#tickets.filter((t) => t.status !== "closed").map((t) => ({ ...t }));
  }

  claim(id: number): Ticket {
    const ticket = this.#find(id);
    if (ticket.status !== "open") throw new Error(`cannot claim ticket ${id}: it is ${ticket.status}`);
    ticket.status = "claimed";
    return { ...ticket };
  }

  close(id: number): Ticket {
    const ticket = this.#find(id);
    ticket.status = "closed"; // closing a closed ticket returns it unchanged
    return { ...ticket };
  }

  #find(id: number): Ticket {
    const ticket = this.#tickets.find((t) => t.id === id);
    if (!ticket) throw new Error(`Ticket #${id} not found`);
    return ticket;
  }
}
