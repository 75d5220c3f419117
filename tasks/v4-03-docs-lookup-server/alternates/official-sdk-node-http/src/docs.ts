// Alternate legitimate solution: the pages as data, apart from the MCP wiring.
export interface Page {
  slug: string;
  title: string;
  body: string;
}

export const PAGES: readonly Page[] = [
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

export function pageMarkdown(page: Page): string {
  return `# ${page.title}\n\n${page.body}`;
}
