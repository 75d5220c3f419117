// Alternate legitimate solution: the official TypeScript SDK (@modelcontextprotocol/sdk) on node:http, stateless;
// the unknown-slug read throws an McpError, the search result is JSON text only.
import { createServer } from "node:http";
import { McpServer, ResourceTemplate } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { PAGES, pageMarkdown } from "./docs.js";

function buildServer(): McpServer {
  const server = new McpServer({ name: "docs-lookup-server", version: "1.0.0" });

  server.registerResource("docs-index", "docs://index", { mimeType: "application/json" }, async (uri) => ({
    contents: [
      {
        uri: uri.href,
        mimeType: "application/json",
        text: JSON.stringify({ pages: PAGES.map((p) => ({ slug: p.slug, title: p.title })) }),
      },
    ],
  }));

  server.registerResource(
    "docs-page",
    new ResourceTemplate("docs://pages/{slug}", { list: undefined }),
    { mimeType: "text/markdown" },
    async (uri, { slug }) => {
      const page = PAGES.find((p) => p.slug === slug);
      if (!page) throw new McpError(ErrorCode.InvalidParams, `page not found: ${String(slug)}`);
      return { contents: [{ uri: uri.href, mimeType: "text/markdown", text: pageMarkdown(page) }] };
    },
  );

  server.registerTool(
    "search_docs",
    { description: "Case-insensitive substring search over page titles and bodies.", inputSchema: { query: z.string() } },
    async ({ query }) => {
      const q = query.toLocaleLowerCase("en");
      const results = PAGES.filter((p) => `${p.title}\u0000${p.body}`.toLocaleLowerCase("en").includes(q)).map(
        (p) => ({ slug: p.slug, title: p.title }),
      );
      return { content: [{ type: "text", text: JSON.stringify({ count: results.length, results }) }] };
    },
  );
  return server;
}

const http = createServer(async (req, res) => {
  if (new URL(req.url ?? "/", "http://localhost").pathname !== "/mcp") {
    res.writeHead(404).end();
    return;
  }
  if (req.method !== "POST") {
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
http.listen(port, "127.0.0.1", () => console.log(`docs MCP server on http://127.0.0.1:${port}/mcp`));
