import { MCPServer } from "mcp-use";
import { z } from "zod";
import { DOCS, findPage, search } from "./pages.js";

const server = new MCPServer({ name: "quillstone-docs", version: "2.0.0" });

server
  .resource(
    { name: "index", uri: "docs://index", mimeType: "application/json", description: "All pages (slug, title)" },
    (uri) => ({
      contents: [
        {
          uri: uri.toString(),
          mimeType: "application/json",
          text: JSON.stringify({ pages: DOCS.map(({ slug, title }) => ({ slug, title })) }, null, 2),
        },
      ],
    }),
  )
  .resourceTemplate(
    { name: "page", uriTemplate: "docs://pages/{slug}", mimeType: "text/markdown", description: "One page as markdown" },
    (uri, params) => {
      const slug = Array.isArray(params.slug) ? params.slug.join("/") : params.slug;
      const page = findPage(slug);
      if (page === undefined) {
        throw new Error(`page not found: ${slug}`);
      }
      return { contents: [{ uri: uri.toString(), mimeType: "text/markdown", text: page.markdown }] };
    },
  );

server.tool(
  {
    name: "search_docs",
    description: "Case-insensitive substring search over page titles and bodies.",
    inputSchema: z.object({ query: z.string() }),
  },
  ({ query }) => {
    const results = search(query).map(({ slug, title }) => ({ slug, title }));
    return { content: [{ type: "text", text: JSON.stringify({ count: results.length, results }) }] };
  },
);

const port = Number(process.env.PORT);
await server.listen(port, { host: "0.0.0.0" });
