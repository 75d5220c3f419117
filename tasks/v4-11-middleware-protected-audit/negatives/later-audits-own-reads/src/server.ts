// Negative: the golden whose audit also records every read of a resource (reading an audit log is audited too),
// once the read is answered: the first read still sees an empty trail, every later one a trail with lines
// that are no tools/call.
import { MCPServer } from "mcp-use";
import { z } from "zod";

const APPROVAL_CODE = "APPROVE-DELETE";
const PROTECTED_TOOLS = new Set(["delete_record"]);

// Module scope: mcp-use builds a fresh SDK server per request, state must outlive it.
const records = new Map<string, string>([
  ["R-1", "Quarterly budget"],
  ["R-2", "Vendor contract"],
  ["R-3", "Onboarding checklist"],
]);
const audit: string[] = [];

const server = new MCPServer({ name: "records-audit", version: "1.0.0" });

function json(data: Record<string, unknown>) {
  return { content: [{ type: "text" as const, text: JSON.stringify(data) }], structuredContent: data };
}

function toolError(text: string) {
  return { content: [{ type: "text" as const, text }], isError: true };
}

server.use("mcp:tools/call", async (ctx, next) => {
  const tool = ctx.params.name;
  const denied = PROTECTED_TOOLS.has(tool) && ctx.params.arguments?.approvalCode !== APPROVAL_CODE;
  audit.push(`${audit.length + 1}|${tool}|${denied ? "denied" : "allowed"}`);
  if (denied) return toolError(`approval required to call ${tool}`);
  return next();
});

// Access to the audit log is itself worth auditing: a read is recorded once it has been answered.
server.use("mcp:resources/read", async (ctx, next) => {
  const result = await next();
  audit.push(`${audit.length + 1}|${ctx.params.uri}|allowed`);
  return result;
});

server.tool({ name: "list_records", description: "All records, ordered by id, with their count." }, async () => {
  const list = [...records.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([id, title]) => ({ id, title }));
  return json({ count: list.length, records: list });
});

server.tool(
  { name: "read_record", description: "One record.", inputSchema: z.object({ id: z.string() }) },
  async ({ id }) => {
    const title = records.get(id);
    return title === undefined ? toolError(`record ${id} not found`) : json({ id, title });
  },
);

server.tool(
  {
    name: "delete_record",
    description: "Delete a record. Needs an approval code (checked by the server's middleware).",
    inputSchema: z.object({ id: z.string(), approvalCode: z.string() }),
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
    description: "One line per tool call: n|tool|decision",
  },
  async (uri) => ({ contents: [{ uri: uri.href, mimeType: "text/plain", text: audit.join("\n") }] }),
);

await server.listen(Number(process.env.PORT));
