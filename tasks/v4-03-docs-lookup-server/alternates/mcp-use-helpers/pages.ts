// Alternate legitimate solution: the pages kept as their markdown; slug and title derived from it.
const SOURCES: Array<[string, string]> = [
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

export interface Doc {
  slug: string;
  title: string;
  markdown: string;
  haystack: string; // title and body, lowercased, for search only
}

export const DOCS: Doc[] = SOURCES.map(([slug, markdown]) => {
  const [heading, , body] = markdown.split("\n");
  const title = heading.replace(/^# /, "");
  return { slug, title, markdown, haystack: `${title}\n${body}`.toLowerCase() };
});

export function search(query: string): Array<{ slug: string; title: string }> {
  const needle = query.toLowerCase();
  return DOCS.filter((d) => d.haystack.includes(needle)).map(({ slug, title }) => ({ slug, title }));
}
