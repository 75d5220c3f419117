import { MCPServer } from "mcp-use";
import { z } from "zod";
import { AuditLog, RecordStore, type Decision } from "./store.js";

const store = new RecordStore([
  { id: "R-1", title: "Quarterly budget" },
  { id: "R-2", title: "Vendor contract" },
  { id: "R-3", title: "Onboarding checklist" },
]);
const audit = new AuditLog();

const server = new MCPServer({ name: "records-audit-structured", version: "1.0.0" });

// 1) Audit: every tools/call is recorded in arrival order, before anything else runs.
server.use("mcp:tools/call", async (ctx, next) => {
  const event = audit.record(ctx.params.name);
  ctx.state.set("audit-event", event);
  return next();
});

// 2) Approval gate for destructive calls.
server.use("mcp:tools/call", async (ctx, next) => {
  if (ctx.params.name !== "delete_record") return next();
  const code = ctx.params.arguments?.["approvalCode"];
  if (code === "APPROVE-DELETE") return next();
  const event = ctx.state.get("audit-event") as { decision: Decision } | undefined;
  if (event) event.decision = "denied";
  return {
    content: [{ type: "text", text: "approval required to call delete_record" }],
    isError: true,
  };
});

const recordShape = z.object({ id: z.string(), title: z.string() });

server.tool(
  {
    name: "list_records",
    inputSchema: z.object({}),
    outputSchema: z.object({ count: z.number().int(), records: z.array(recordShape) }),
    annotations: { readOnlyHint: true },
  },
  async () => {
    const records = store.list();
    const data = { count: records.length, records };
    return { content: [{ type: "text", text: JSON.stringify(data) }], structuredContent: data };
  },
);

server.tool(
  {
    name: "read_record",
    inputSchema: z.object({ id: z.string().describe("Record id, e.g. R-1") }),
    outputSchema: recordShape,
    annotations: { readOnlyHint: true },
  },
  async ({ id }) => {
    const record = store.get(id);
    if (!record) return { content: [{ type: "text", text: `record ${id} not found` }], isError: true };
    return { content: [{ type: "text", text: JSON.stringify(record) }], structuredContent: record };
  },
);

server.tool(
  {
    name: "delete_record",
    inputSchema: z.object({
      id: z.string().describe("Record id"),
      approvalCode: z.string().describe("Approval code authorizing the deletion"),
    }),
    outputSchema: z.object({ id: z.string(), deleted: z.literal(true) }),
    annotations: { destructiveHint: true },
  },
  async ({ id }) => {
    if (!store.remove(id)) return { content: [{ type: "text", text: `record ${id} not found` }], isError: true };
    const data = { id, deleted: true as const };
    return { content: [{ type: "text", text: JSON.stringify(data) }], structuredContent: data };
  },
);

server.resource(
  { name: "audit-events", uri: "audit://events", mimeType: "text/plain", title: "Audit trail" },
  async (uri) => ({ contents: [{ uri: uri.href, mimeType: "text/plain", text: audit.render() }] }),
);

await server.listen(Number(process.env.PORT), { host: "127.0.0.1" });
