// Alternate legitimate solution: root index.ts entry; the audit and the approval gate are separate mcp:tools/call middlewares (lib/middleware.ts), the records a module of their own.
import { MCPServer, type CallToolResult } from "mcp-use";
import { z } from "zod";
import { AuditTrail, approvalGate } from "./lib/middleware";
import { all, find, remove } from "./lib/records";

const trail = new AuditTrail();
const server = new MCPServer({ name: "records", version: "2.0.0" });

server.use("mcp:tools/call", trail.middleware());
server.use("mcp:tools/call", approvalGate("APPROVE-DELETE", ["delete_record"]));

const reply = (value: object): CallToolResult => ({ content: [{ type: "text", text: JSON.stringify(value) }] });
const notFound = (id: string): CallToolResult => ({ isError: true, content: [{ type: "text", text: `record ${id} not found` }] });

server.tool({ name: "list_records" }, async () => {
  const records = all();
  return reply({ count: records.length, records });
});

server.tool({ name: "read_record", inputSchema: z.object({ id: z.string() }) }, async ({ id }) => {
  const record = find(id);
  return record ? reply(record) : notFound(id);
});

server.tool(
  { name: "delete_record", inputSchema: z.object({ id: z.string(), approvalCode: z.string() }) },
  async ({ id }) => (remove(id) ? reply({ id, deleted: true }) : notFound(id)),
);

server.resource({ name: "audit-events", uri: "audit://events", mimeType: "text/plain" }, async (uri) => ({
  contents: [{ uri: uri.toString(), mimeType: "text/plain", text: trail.text() }],
}));

server.listen().then(({ port }) => console.log(`records server on :${port}/mcp`));
