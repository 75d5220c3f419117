// Alternate legitimate solution: the record store, kept apart from the MCP wiring.
export type RecordEntry = { id: string; title: string };

const store: RecordEntry[] = [
  { id: "R-1", title: "Quarterly budget" },
  { id: "R-2", title: "Vendor contract" },
  { id: "R-3", title: "Onboarding checklist" },
];

export function all(): RecordEntry[] {
  return [...store].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

export function find(id: string): RecordEntry | undefined {
  return store.find((r) => r.id === id);
}

export function remove(id: string): boolean {
  const index = store.findIndex((r) => r.id === id);
  if (index < 0) return false;
  store.splice(index, 1);
  return true;
}
