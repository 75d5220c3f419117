import { MCPServer } from "mcp-use";
import { createJwtVerifier, oauthCustomProvider, type OAuthMetadata } from "mcp-use/oauth";

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} must be set`);
  return value;
}

const issuer = env("OAUTH_ISSUER_URL");
const jwksUrl = new URL(env("OAUTH_JWKS_URL"));
const audience = env("OAUTH_AUDIENCE");
const port = Number(env("PORT"));

async function discover(): Promise<OAuthMetadata> {
  const res = await fetch(`${issuer.replace(/\/+$/, "")}/.well-known/oauth-authorization-server`);
  if (!res.ok) throw new Error(`authorization server metadata: HTTP ${res.status}`);
  // Keep the issuer exactly as configured: it is what the PRM advertises.
  return { ...((await res.json()) as OAuthMetadata), issuer };
}

interface OktaUser {
  id: string;
  email: string;
  name: string;
}

const oauth = oauthCustomProvider<OktaUser>({
  resource: `http://127.0.0.1:${port}/mcp`,
  oauthMetadata: await discover(),
  createTokenVerifier: (resource) => createJwtVerifier({ issuer, jwksUrl, resource, audience, algorithms: ["RS256"] }),
  mapAuthInfo: (authInfo) => {
    const claims = (authInfo.extra?.payload ?? {}) as Record<string, unknown>;
    const s = (v: unknown) => (typeof v === "string" ? v : "");
    // Okta: `uid` is the user id, `sub` is the login (the email address).
    return { user: { id: s(claims.uid), email: s(claims.sub), name: s(claims.name) }, payload: claims, permissions: [] };
  },
});

const server = new MCPServer<OktaUser>({ name: "whoami-okta", version: "1.0.0", oauth });

server.tool({ name: "whoami", description: "Return the Okta user id, email and name of the caller." }, async (_args, ctx) => ({
  content: [{ type: "text", text: JSON.stringify(ctx.auth.user) }],
}));

await server.listen(port, { host: "127.0.0.1" });
