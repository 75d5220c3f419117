import { MCPServer, type CallToolResult } from "mcp-use";
import { collectOperations, loadSpec, type Operation } from "./openapi.js";

const serviceUrl = process.env.ORDERS_API_URL;
if (!serviceUrl) throw new Error("ORDERS_API_URL must point at the order service");

async function invoke(op: Operation, args: Record<string, unknown>): Promise<CallToolResult> {
  const path = op.path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(String(args[name])));
  const url = new URL(serviceUrl!.replace(/\/$/, "") + path);
  for (const name of op.queryParams) {
    if (args[name] !== undefined) url.searchParams.append(name, String(args[name]));
  }
  const init: RequestInit = { method: op.method, headers: { Accept: "application/json" } };
  if (op.bodyFields) {
    const body: Record<string, unknown> = {};
    for (const name of op.bodyFields) if (args[name] !== undefined) body[name] = args[name];
    init.headers = { Accept: "application/json", "Content-Type": "application/json" };
    init.body = JSON.stringify(body);
  }

  const response = await fetch(url, init);
  const text = await response.text();
  if (response.ok) return { content: [{ type: "text", text }] };

  let message = text;
  try {
    const parsed = JSON.parse(text);
    if (typeof parsed?.error === "string") message = parsed.error;
  } catch {
    // not JSON: report the raw body
  }
  return {
    isError: true,
    content: [{ type: "text", text: `${op.operationId} failed with HTTP ${response.status}: ${message}` }],
  };
}

const server = new MCPServer({ name: "order-service-mcp", version: "1.0.0" });

for (const op of collectOperations(loadSpec())) {
  server.tool(
    { name: op.operationId, description: op.description, inputSchema: op.inputSchema },
    (args) => invoke(op, args),
  );
}

await server.listen(Number(process.env.PORT));
