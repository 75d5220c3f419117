// Documentation lookup MCP server (mcp-use v2): an index resource, a page resource
// template and a case-insensitive substring search tool over four fixed pages.
import { MCPServer } from "mcp-use";
import { z } from "zod";

interface Page {
  slug: string;
  title: string;
  body: string;
}

const PAGES: readonly Page[] = [
  {
    slug: "getting-started",
    title: "Getting Started",
    body: "Install the Quillstone command line tool with pip install quillstone, then run quill init inside an empty folder. The scaffold contains a sample notebook named lighthouse that walks you through your first query.",
  },
  {
    slug: "authentication",
    title: "Authentication",
    body: "Every API request must send a personal access token in the X-Quill-Token header. Tokens are created on the Settings page and expire after 90 days. Requests with a missing or expired token are rejected with status 401.",
  },
  {
    slug: "deployment",
    title: "Deployment",
    body: "Publish a project with quill deploy. Each deploy is immutable and gets a new revision number, so rolling back simply moves traffic to an earlier revision. Deploys to the eu-west region finish in about two minutes.",
  },
  {
    slug: "rate-limits",
    title: "Rate Limits",
    body: "Each access token may send 600 requests per minute. When the limit is exceeded the API answers with status 429 and a Retry-After header giving the number of seconds to wait.",
  },
];

const toMarkdown = (page: Page) => `# ${page.title}\n\n${page.body}\n`;
const summary = ({ slug, title }: Page) => ({ slug, title });

const server = new MCPServer({ name: "docs-lookup", version: "1.0.0" });

server.resource(
  {
    name: "docs-index",
    uri: "docs://index",
    title: "Documentation index",
    description: "Slugs and titles of every documentation page, in order.",
    mimeType: "application/json",
  },
  async (uri) => ({
    contents: [
      { uri: uri.href, mimeType: "application/json", text: JSON.stringify({ pages: PAGES.map(summary) }) },
    ],
  }),
);

server.resourceTemplate(
  {
    name: "docs-page",
    uriTemplate: "docs://pages/{slug}",
    title: "Documentation page",
    description: "The markdown of one documentation page.",
    mimeType: "text/markdown",
    complete: { slug: PAGES.map((p) => p.slug) },
  },
  async (uri, { slug }) => {
    const page = PAGES.find((p) => p.slug === slug);
    // A thrown error becomes a JSON-RPC error response for resources/read.
    if (!page) throw new Error(`page not found: ${String(slug)}`);
    return { contents: [{ uri: uri.href, mimeType: "text/markdown", text: toMarkdown(page) }] };
  },
);

const searchOutput = z.object({
  count: z.int(),
  results: z.array(z.object({ slug: z.string(), title: z.string() })),
});

server.tool(
  {
    name: "search_docs",
    description: "Find pages whose title or body contains the query (one case-insensitive substring).",
    inputSchema: z.object({ query: z.string().describe("Text to look for, matched as a whole") }),
    outputSchema: searchOutput,
    annotations: { readOnlyHint: true },
  },
  async ({ query }) => {
    const needle = query.toLowerCase();
    const results = PAGES.filter(
      (p) => p.title.toLowerCase().includes(needle) || p.body.toLowerCase().includes(query),
    ).map(summary);
    const result = { count: results.length, results };
    return { content: [{ type: "text", text: JSON.stringify(result) }], structuredContent: result };
  },
);

await server.listen(Number(process.env.PORT), { host: "127.0.0.1" });
