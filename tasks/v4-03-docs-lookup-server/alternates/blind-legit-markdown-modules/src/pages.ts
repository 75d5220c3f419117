// The documentation set, stored as the literal markdown of each page. Title and
// body are derived from the markdown so the two can never drift apart.
const SOURCES: ReadonlyArray<readonly [slug: string, markdown: string]> = [
  [
    "getting-started",
    "# Getting Started\n\nInstall the Quillstone command line tool with pip install quillstone, then run quill init inside an empty folder. The scaffold contains a sample notebook named lighthouse that walks you through your first query.",
  ],
  [
    "authentication",
    "# Authentication\n\nEvery API request must send a personal access token in the X-Quill-Token header. Tokens are created on the Settings page and expire after 90 days. Requests with a missing or expired token are rejected with status 401.",
  ],
  [
    "deployment",
    "# Deployment\n\nPublish a project with quill deploy. Each deploy is immutable and gets a new revision number, so rolling back simply moves traffic to an earlier revision. Deploys to the eu-west region finish in about two minutes.",
  ],
  [
    "rate-limits",
    "# Rate Limits\n\nEach access token may send 600 requests per minute. When the limit is exceeded the API answers with status 429 and a Retry-After header giving the number of seconds to wait.",
  ],
];

export interface DocPage {
  readonly slug: string;
  readonly title: string;
  readonly body: string;
  readonly markdown: string;
}

export const DOCS: readonly DocPage[] = SOURCES.map(([slug, markdown]) => {
  const match = /^# (.+)\n\n(.+)$/.exec(markdown);
  if (!match) throw new Error(`malformed page ${slug}`);
  return { slug, title: match[1], body: match[2], markdown };
});

const BY_SLUG = new Map(DOCS.map((page) => [page.slug, page]));

export function findPage(slug: string): DocPage | undefined {
  return BY_SLUG.get(slug);
}

/** Pages whose title or body contains `query` (one substring, case-insensitive), in page order. */
export function search(query: string): DocPage[] {
  const pattern = new RegExp(query.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "i");
  return DOCS.filter((page) => pattern.test(page.title) || pattern.test(page.body));
}
