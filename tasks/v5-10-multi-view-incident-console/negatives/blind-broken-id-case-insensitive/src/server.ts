import { MCPServer } from "mcp-use";
import { z } from "zod";

const INCIDENTS = [
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
] as const;

const incidentSummary = z.object({
  id: z.string(),
  title: z.string(),
  severity: z.string(),
  status: z.string(),
});
const incidentDetail = incidentSummary.extend({ responders: z.array(z.string()) });

const server = new MCPServer({
  name: "incident-console",
  title: "Incident console",
  version: "1.0.0",
  description: "Read-only console over a fixed list of production incidents.",
});

export const listIncidents = server.tool(
  {
    name: "list_incidents",
    title: "List incidents",
    description: "List every production incident with its severity and status.",
    inputSchema: z.object({}),
    outputSchema: z.object({ count: z.number().int(), incidents: z.array(incidentSummary) }),
    view: { name: "incident-list", description: "Incident list" },
    annotations: { readOnlyHint: true },
  },
  async () => {
    const data = {
      count: INCIDENTS.length,
      incidents: INCIDENTS.map(({ id, title, severity, status }) => ({ id, title, severity, status })),
    };
    return { content: [{ type: "text", text: JSON.stringify(data) }], structuredContent: data };
  },
);

export const getIncident = server.tool(
  {
    name: "get_incident",
    title: "Get incident",
    description: "Get one incident, including its responders, by id (e.g. INC-102).",
    inputSchema: z.object({ id: z.string().describe("Incident id, e.g. INC-102") }),
    outputSchema: incidentDetail,
    view: { name: "incident-detail", description: "Incident detail" },
    annotations: { readOnlyHint: true },
  },
  async ({ id }) => {
    const wanted = id.trim().toUpperCase();
    const found = INCIDENTS.find((incident) => incident.id === wanted);
    if (!found) {
      return { content: [{ type: "text", text: `incident ${id} not found` }], isError: true };
    }
    const data = { ...found, responders: [...found.responders] };
    return { content: [{ type: "text", text: JSON.stringify(data) }], structuredContent: data };
  },
);

export default server;
