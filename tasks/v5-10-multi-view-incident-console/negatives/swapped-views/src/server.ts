// Negative: binds list_incidents to the detail view and get_incident to the list view.
import { MCPServer } from "mcp-use";
import { z } from "zod";

const INCIDENTS = [
  { id: "INC-101", title: "Checkout latency above 2 seconds", severity: "sev2", status: "investigating",
    responders: ["Marcus Lee", "Ana Costa"] },
  { id: "INC-102", title: "Payment webhooks failing", severity: "sev1", status: "mitigated",
    responders: ["Priya Shah"] },
  { id: "INC-103", title: "Search index stale", severity: "sev3", status: "resolved",
    responders: ["Hana Kim", "Oren Katz"] },
];

const Summary = z.object({ id: z.string(), title: z.string(), severity: z.string(), status: z.string() });
const Incident = Summary.extend({ responders: z.array(z.string()) });

const server = new MCPServer({ name: "incident-console", version: "1.0.0" });

server.tool(
  {
    name: "list_incidents",
    description: "List every incident (id, title, severity, status).",
    inputSchema: z.object({}),
    outputSchema: z.object({ count: z.number().int(), incidents: z.array(Summary) }),
    view: { name: "incident-detail", description: "Incident list", prefersBorder: true },
  },
  async () => {
    const data = {
      count: INCIDENTS.length,
      incidents: INCIDENTS.map(({ id, title, severity, status }) => ({ id, title, severity, status })),
    };
    return { content: [{ type: "text", text: JSON.stringify(data) }], structuredContent: data };
  },
);

server.tool(
  {
    name: "get_incident",
    description: "Get one incident by id, with its responders.",
    inputSchema: z.object({ id: z.string().describe("An incident id such as INC-102") }),
    outputSchema: Incident,
    view: { name: "incident-list", description: "Incident detail", prefersBorder: true },
  },
  async ({ id }) => {
    const incident = INCIDENTS.find((i) => i.id === id);
    if (!incident) {
      return { content: [{ type: "text", text: `incident ${id} not found` }], isError: true };
    }
    return { content: [{ type: "text", text: JSON.stringify(incident) }], structuredContent: incident };
  },
);

export default server;
