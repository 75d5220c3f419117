// Alternate legitimate solution: src/index.ts entry, tools with zod outputSchemas answering with structured content only, the approval-and-audit middleware a named function typed with mcp-use's McpMiddlewareNext, listen() reading PORT itself.
import { MCPServer, type McpMiddlewareNext, type ToolsCallMiddlewareContext } from "mcp-use";
import { z } from "zod";

type Decision = "allowed" | "denied";
const trail: { tool: string; decision: Decision }[] = [];
const titles: Record<string, string> = {
  "R-1": "Quarterly budget",
  "R-2": "Vendor contract",
  "R-3": "Onboarding checklist",
};

const Record_ = z.object({ id: z.string(), title: z.string() });

async function approvalAndAudit(ctx: ToolsCallMiddlewareContext, next: McpMiddlewareNext<"tools/call">) {
  const { name, arguments: args } = ctx.params;
  const decision: Decision = name === "delete_record" && args?.approvalCode !== "APPROVE-DELETE" ? "denied" : "allowed";
  trail.push({ tool: name, decision });
  if (decision === "denied") {
    return { isError: true, content: [{ type: "text" as const, text: `approval required to call ${name}` }] };
  }
  return next();
}

const server = new MCPServer({ name: "records", version: "1.0.0" });
server.use("mcp:tools/call", approvalAndAudit);

const missing = (id: string) => ({ isError: true as const, content: [{ type: "text" as const, text: `record ${id} not found` }] });

server.tool(
  { name: "list_records", outputSchema: z.object({ count: z.number().int(), records: z.array(Record_) }) },
  async () => {
    const records = Object.keys(titles).sort().map((id) => ({ id, title: titles[id] }));
    return { content: [], structuredContent: { count: records.length, records } };
  },
);

server.tool(
  { name: "read_record", inputSchema: z.object({ id: z.string() }), outputSchema: Record_ },
  async ({ id }) => (id in titles ? { content: [], structuredContent: { id, title: titles[id] } } : missing(id)),
);

server.tool(
  {
    name: "delete_record",
    inputSchema: z.object({ id: z.string(), approvalCode: z.string() }),
    outputSchema: z.object({ id: z.string(), deleted: z.boolean() }),
  },
  async ({ id }) => {
    if (!(id in titles)) return missing(id);
    delete titles[id];
    return { content: [], structuredContent: { id, deleted: true } };
  },
);

server.resource({ name: "audit-events", uri: "audit://events", mimeType: "text/plain" }, async (uri) => ({
  contents: [
    { uri: uri.href, mimeType: "text/plain", text: trail.map((e, i) => `${i + 1}|${e.tool}|${e.decision}`).join("\n") },
  ],
}));

void server.listen();
