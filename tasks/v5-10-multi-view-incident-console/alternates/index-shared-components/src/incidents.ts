// Alternate legitimate solution: the incident data and its zod schemas, apart from the server wiring.
import { z } from "zod";

export const IncidentSummary = z.object({
  id: z.string(),
  title: z.string(),
  severity: z.enum(["sev1", "sev2", "sev3"]),
  status: z.enum(["investigating", "mitigated", "resolved"]),
});
export const Incident = IncidentSummary.extend({ responders: z.array(z.string()) });
export type Incident = z.infer<typeof Incident>;

export const INCIDENTS: readonly Incident[] = [
  { id: "INC-101", title: "Checkout latency above 2 seconds", severity: "sev2", status: "investigating", responders: ["Marcus Lee", "Ana Costa"] },
  { id: "INC-102", title: "Payment webhooks failing", severity: "sev1", status: "mitigated", responders: ["Priya Shah"] },
  { id: "INC-103", title: "Search index stale", severity: "sev3", status: "resolved", responders: ["Hana Kim", "Oren Katz"] },
];

export function summary({ id, title, severity, status }: Incident) {
  return { id, title, severity, status };
}
