// Negative: search_docs lowercases the query but not the pages, so it ignores the query's case only where the page
// text is lowercase (Immutable finds deployment; QUILL misses X-Quill-Token).
import { MCPServer } from "mcp-use";
import { z } from "zod";

interface Page {
  slug: string;
  title: string;
  body: string;
}

const PAGES: Page[] = [
  {
    slug: "getting-started",
    title: "Getting Started",
    body:
      "Install the Quillstone command line tool with pip install quillstone, then run quill init inside an empty " +
      "folder. The scaffold contains a sample notebook named lighthouse that walks you through your first query.",
  },
  {
    slug: "authentication",
    title: "Authentication",
    body:
      "Every API request must send a personal access token in the X-Quill-Token header. Tokens are created on the " +
      "Settings page and expire after 90 days. Requests with a missing or expired token are rejected with status 401.",
  },
  {
    slug: "deployment",
    title: "Deployment",
    body:
      "Publish a project with quill deploy. Each deploy is immutable and gets a new revision number, so rolling " +
      "back simply moves traffic to an earlier revision. Deploys to the eu-west region finish in about two minutes.",
  },
  {
    slug: "rate-limits",
    title: "Rate Limits",
    body:
      "Each access token may send 600 requests per minute. When the limit is exceeded the API answers with status " +
      "429 and a Retry-After header giving the number of seconds to wait.",
  },
];

const markdown = (page: Page): string => `# ${page.title}\n\n${page.body}\n`;

const server = new MCPServer({ name: "docs-lookup-server", version: "1.0.0" });

server.resource(
  { name: "docs-index", uri: "docs://index", mimeType: "application/json", description: "Every page's slug and title" },
  async (uri) => ({
    contents: [
      {
        uri: uri.href,
        mimeType: "application/json",
        text: JSON.stringify({ pages: PAGES.map(({ slug, title }) => ({ slug, title })) }),
      },
    ],
  }),
);

server.resourceTemplate(
  { name: "docs-page", uriTemplate: "docs://pages/{slug}", mimeType: "text/markdown", description: "One page as markdown" },
  async (uri, { slug }) => {
    const page = PAGES.find((p) => p.slug === slug);
    if (!page) throw new Error(`page not found: ${String(slug)}`);
    return { contents: [{ uri: uri.href, mimeType: "text/markdown", text: markdown(page) }] };
  },
);

server.tool(
  {
    name: "search_docs",
    description: "Case-insensitive substring search over the titles and bodies of the docs pages.",
    inputSchema: z.object({ query: z.string().describe("Text to look for (one substring, any case)") }),
  },
  async ({ query }) => {
    const needle = query.toLowerCase();
    const results = PAGES.filter(
      (p) => p.title.includes(needle) || p.body.includes(needle),
    ).map(({ slug, title }) => ({ slug, title }));
    const found = { count: results.length, results };
    return { content: [{ type: "text", text: JSON.stringify(found) }], structuredContent: found };
  },
);

await server.listen(Number(process.env.PORT));
