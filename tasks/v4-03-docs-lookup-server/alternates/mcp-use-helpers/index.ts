// Alternate legitimate solution: mcp-use's response helpers (object, markdown), a slug completer on the template,
// entry index.ts at the workspace root, PORT read by listen() itself.
import { MCPServer, markdown, object } from "mcp-use";
import { z } from "zod";
import { DOCS, search } from "./pages.js";

const server = new MCPServer({ name: "quillstone-docs", version: "0.1.0" });

server.resource(
  { name: "index", title: "Docs index", uri: "docs://index", mimeType: "application/json" },
  async () => object({ pages: DOCS.map(({ slug, title }) => ({ slug, title })) }),
);

server.resourceTemplate(
  {
    name: "page",
    title: "Docs page",
    uriTemplate: "docs://pages/{slug}",
    mimeType: "text/markdown",
    complete: { slug: DOCS.map((d) => d.slug) },
  },
  async (_uri, { slug }) => {
    const doc = DOCS.find((d) => d.slug === slug);
    if (doc === undefined) throw new Error(`Docs page "${String(slug)}" not found`);
    return markdown(doc.markdown);
  },
);

server.tool(
  {
    name: "search_docs",
    description: "Find the docs pages whose title or body contains the query (case-insensitive).",
    inputSchema: z.object({ query: z.string() }),
    annotations: { readOnlyHint: true },
  },
  async ({ query }) => {
    const results = search(query);
    return object({ count: results.length, results });
  },
);

await server.listen();
