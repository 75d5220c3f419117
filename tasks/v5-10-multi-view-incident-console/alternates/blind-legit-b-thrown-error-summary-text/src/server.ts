import { MCPServer } from "mcp-use";
import { z } from "zod";
import { findIncident, incidents } from "./incidents.js";

const Severity = z.enum(["sev1", "sev2", "sev3"]);
const Status = z.enum(["investigating", "mitigated", "resolved"]);

const server = new MCPServer({ name: "incident-console", version: "0.2.0" });

server.tool(
  {
    name: "list_incidents",
    description: "All production incidents (read-only).",
    outputSchema: z.object({
      count: z.number().int().nonnegative(),
      incidents: z.array(z.object({ id: z.string(), title: z.string(), severity: Severity, status: Status })),
    }),
    view: { name: "incident-list", prefersBorder: true },
  },
  () => {
    const rows = incidents.map((i) => ({
      id: i.id,
      title: i.title,
      severity: i.severity as z.infer<typeof Severity>,
      status: i.status as z.infer<typeof Status>,
    }));
    return {
      content: [{ type: "text", text: `${rows.length} incidents: ${rows.map((r) => r.id).join(", ")}` }],
      structuredContent: { count: rows.length, incidents: rows },
    };
  },
);

server.tool(
  {
    name: "get_incident",
    description: "One incident with its responders.",
    inputSchema: z.object({ id: z.string() }),
    outputSchema: z.object({
      id: z.string(),
      title: z.string(),
      severity: Severity,
      status: Status,
      responders: z.array(z.string()),
    }),
    view: { name: "incident-detail", prefersBorder: true },
  },
  ({ id }) => {
    const incident = findIncident(id);
    if (incident === undefined) {
      // Thrown errors from a tool callback surface as a tool result with isError: true.
      throw new Error(`incident ${id} not found`);
    }
    const detail = {
      id: incident.id,
      title: incident.title,
      severity: incident.severity as z.infer<typeof Severity>,
      status: incident.status as z.infer<typeof Status>,
      responders: [...incident.responders],
    };
    return {
      content: [{ type: "text", text: `${detail.id} (${detail.severity}, ${detail.status}): ${detail.title}` }],
      structuredContent: detail,
    };
  },
);

export default server;
