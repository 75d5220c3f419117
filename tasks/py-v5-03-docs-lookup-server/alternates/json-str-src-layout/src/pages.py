"""The seeded documentation, kept as markdown exactly as the prompt gives it."""

GETTING_STARTED = """# Getting Started

Install the Quillstone command line tool with pip install quillstone, then run quill init inside an empty folder. The scaffold contains a sample notebook named lighthouse that walks you through your first query."""

AUTHENTICATION = """# Authentication

Every API request must send a personal access token in the X-Quill-Token header. Tokens are created on the Settings page and expire after 90 days. Requests with a missing or expired token are rejected with status 401."""

DEPLOYMENT = """# Deployment

Publish a project with quill deploy. Each deploy is immutable and gets a new revision number, so rolling back simply moves traffic to an earlier revision. Deploys to the eu-west region finish in about two minutes."""

RATE_LIMITS = """# Rate Limits

Each access token may send 600 requests per minute. When the limit is exceeded the API answers with status 429 and a Retry-After header giving the number of seconds to wait."""

# slug -> markdown, in the documented order
MARKDOWN = {
    "getting-started": GETTING_STARTED,
    "authentication": AUTHENTICATION,
    "deployment": DEPLOYMENT,
    "rate-limits": RATE_LIMITS,
}


def title_of(markdown: str) -> str:
    return markdown.splitlines()[0].removeprefix("# ").strip()
