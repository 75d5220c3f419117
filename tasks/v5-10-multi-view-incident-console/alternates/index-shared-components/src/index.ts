// Alternate legitimate solution: src/index.ts entry, exported ToolRefs, data in src/incidents.ts and views that
// share one layout component (views/shared has no view.tsx, so it is not a view of its own).
import { MCPServer } from "mcp-use";
import { z } from "zod";
import { INCIDENTS, Incident, IncidentSummary, summary } from "./incidents.js";

const server = new MCPServer({ name: "incident-console", version: "2.0.0", description: "Read-only incident console" });

export const listIncidents = server.tool(
  {
    name: "list_incidents",
    title: "List incidents",
    description: "All production incidents, in order.",
    outputSchema: z.object({ count: z.number().int(), incidents: z.array(IncidentSummary) }),
    annotations: { readOnlyHint: true },
    view: { name: "incident-list" },
  },
  () => {
    const structuredContent = { count: INCIDENTS.length, incidents: INCIDENTS.map(summary) };
    return { content: [{ type: "text", text: JSON.stringify(structuredContent) }], structuredContent };
  },
);

export const getIncident = server.tool(
  {
    name: "get_incident",
    title: "Get incident",
    description: "One incident by id (e.g. INC-102), responders included.",
    inputSchema: z.object({ id: z.string().describe("Incident id") }),
    outputSchema: Incident,
    annotations: { readOnlyHint: true },
    view: { name: "incident-detail" },
  },
  ({ id }) => {
    const incident = INCIDENTS.find((candidate) => candidate.id === id);
    if (!incident) throw new Error(`incident ${id} not found`);
    return { content: [{ type: "text", text: JSON.stringify(incident) }], structuredContent: { ...incident } };
  },
);

export default server;
