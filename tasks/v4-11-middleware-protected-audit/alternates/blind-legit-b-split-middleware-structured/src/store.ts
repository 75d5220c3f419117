export interface RecordEntry {
  id: string;
  title: string;
}

export class RecordStore {
  readonly #byId = new Map<string, RecordEntry>();

  constructor(seed: RecordEntry[]) {
    for (const r of seed) this.#byId.set(r.id, { ...r });
  }

  list(): RecordEntry[] {
    return [...this.#byId.values()].sort((a, b) => a.id.localeCompare(b.id, "en", { numeric: true }));
  }

  get(id: string): RecordEntry | undefined {
    const r = this.#byId.get(id);
    return r && { ...r };
  }

  remove(id: string): boolean {
    return this.#byId.delete(id);
  }
}

export type Decision = "allowed" | "denied";

export class AuditLog {
  readonly #events: { tool: string; decision: Decision }[] = [];

  record(tool: string): { tool: string; decision: Decision } {
    const event = { tool, decision: "allowed" as Decision };
    this.#events.push(event);
    return event;
  }

  render(): string {
    return this.#events.map((e, i) => `${i + 1}|${e.tool}|${e.decision}`).join("\n");
  }
}
