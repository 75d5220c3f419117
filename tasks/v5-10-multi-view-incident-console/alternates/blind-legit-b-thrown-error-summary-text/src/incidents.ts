export interface Incident {
  id: string;
  title: string;
  severity: string;
  status: string;
  responders: string[];
}

// Embedded exactly as specified, in this order.
export const incidents: readonly Incident[] = Object.freeze([
  {
    id: "INC-101",
    title: "Checkout latency above 2 seconds",
    severity: "sev2",
    status: "investigating",
    responders: ["Marcus Lee", "Ana Costa"],
  },
  {
    id: "INC-102",
    title: "Payment webhooks failing",
    severity: "sev1",
    status: "mitigated",
    responders: ["Priya Shah"],
  },
  {
    id: "INC-103",
    title: "Search index stale",
    severity: "sev3",
    status: "resolved",
    responders: ["Hana Kim", "Oren Katz"],
  },
]);

const byId = new Map(incidents.map((incident) => [incident.id, incident]));

export function findIncident(id: string): Incident | undefined {
  return byId.get(id);
}
