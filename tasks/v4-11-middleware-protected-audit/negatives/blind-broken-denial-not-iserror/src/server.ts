import { MCPServer, type CallToolResult } from "mcp-use";
import { z } from "zod";

const APPROVAL_CODE = "APPROVE-DELETE";

// Module-level state: mcp-use builds a fresh SDK server per HTTP request,
// so anything that must survive between calls lives here.
const records = new Map<string, string>([
  ["R-1", "Quarterly budget"],
  ["R-2", "Vendor contract"],
  ["R-3", "Onboarding checklist"],
]);
const auditTrail: string[] = [];

function json(value: unknown): CallToolResult {
  return { content: [{ type: "text", text: JSON.stringify(value) }] };
}

function toolError(message: string): CallToolResult {
  return { content: [{ type: "text", text: message }], isError: true };
}

const server = new MCPServer({ name: "records-audit", version: "1.0.0" });

server.use("mcp:tools/call", async (ctx, next) => {
  const tool = ctx.params.name;
  const args = (ctx.params.arguments ?? {}) as Record<string, unknown>;
  const denied = tool === "delete_record" && args.approvalCode !== APPROVAL_CODE;
  auditTrail.push(`${auditTrail.length + 1}|${tool}|${denied ? "denied" : "allowed"}`);
  if (denied) return { content: [{ type: "text", text: `approval required to call ${tool}` }] };
  return next();
});

server.tool(
  {
    name: "list_records",
    description: "List the records that still exist, ordered by id.",
    inputSchema: z.object({}),
  },
  async () => {
    const list = [...records.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([id, title]) => ({ id, title }));
    return json({ count: list.length, records: list });
  },
);

server.tool(
  {
    name: "read_record",
    description: "Read one record by id.",
    inputSchema: z.object({ id: z.string() }),
  },
  async ({ id }) => {
    const title = records.get(id);
    return title === undefined ? toolError(`record ${id} not found`) : json({ id, title });
  },
);

server.tool(
  {
    name: "delete_record",
    description: "Delete a record for good. Requires an approval code.",
    inputSchema: z.object({ id: z.string(), approvalCode: z.string() }),
    annotations: { destructiveHint: true },
  },
  async ({ id }) => {
    if (!records.delete(id)) return toolError(`record ${id} not found`);
    return json({ id, deleted: true });
  },
);

server.resource(
  {
    name: "audit-events",
    uri: "audit://events",
    mimeType: "text/plain",
    description: "One line per tools/call: <n>|<tool>|<decision>",
  },
  async (uri) => ({
    contents: [{ uri: uri.href, mimeType: "text/plain", text: auditTrail.join("\n") }],
  }),
);

await server.listen(Number(process.env.PORT));
