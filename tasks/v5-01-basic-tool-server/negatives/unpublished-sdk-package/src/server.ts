// Negative: depends on @modelcontextprotocol/typescript-sdk (the repository name), which is not on npm.
import { createServer } from "node:http";
import { McpServer } from "@modelcontextprotocol/typescript-sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/typescript-sdk/server/streamableHttp.js";
import { z } from "zod";

function buildServer(): McpServer {
  const server = new McpServer({ name: "basic-tool-server", version: "1.0.0" });
  server.registerTool(
    "add",
    {
      description: "Add two integers and return their sum.",
      inputSchema: { a: z.number().int(), b: z.number().int() },
    },
    async ({ a, b }) => ({ content: [{ type: "text", text: String(a + b) }] }),
  );
  return server;
}

const http = createServer(async (req, res) => {
  const path = new URL(req.url ?? "/", "http://localhost").pathname;
  if (path !== "/mcp") {
    res.writeHead(404).end();
    return;
  }
  if (req.method !== "POST") {
    // Stateless: no standalone SSE stream and no sessions to delete.
    res.writeHead(405, { Allow: "POST" }).end();
    return;
  }
  const server = buildServer();
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  res.on("close", () => {
    void transport.close();
    void server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res);
});

const port = Number(process.env.PORT ?? 3000);
http.listen(port, "127.0.0.1", () => console.log(`MCP server on http://127.0.0.1:${port}/mcp`));
