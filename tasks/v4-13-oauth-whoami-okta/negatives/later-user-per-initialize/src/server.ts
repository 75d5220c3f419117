// Negative: the caller is recorded when a session is initialized, in one variable for the whole server, and
// whoami answers it: right while one session is open, but once another user's session starts, an older session
// is answered with the newer session's user.
import { createServer } from "node:http";
import { MCPServer } from "mcp-use";
import { toNodeHandler } from "mcp-use/node";
import { createJwtVerifier, oauthCustomProvider, type OAuthMetadata } from "mcp-use/oauth";

type OktaUser = { id: string; email: string; name: string };

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

const port = Number(process.env.PORT);
const issuer = env("OAUTH_ISSUER_URL");
const jwksUrl = new URL(env("OAUTH_JWKS_URL"));
const audience = env("OAUTH_AUDIENCE");

// The authorization server's own metadata (RFC 8414), so the endpoints are whatever it says they are.
const response = await fetch(`${issuer}/.well-known/oauth-authorization-server`);
if (!response.ok) throw new Error(`authorization server metadata: HTTP ${response.status}`);
const oauthMetadata = (await response.json()) as OAuthMetadata;

const server = new MCPServer<OktaUser>({
  name: "oauth-whoami-okta",
  version: "1.0.0",
  oauth: oauthCustomProvider<OktaUser>({
    resource: `http://127.0.0.1:${port}/mcp`,
    oauthMetadata,
    // Signature (JWKS), iss, aud and exp are all checked by the verifier.
    createTokenVerifier: (resource) => createJwtVerifier({ issuer, jwksUrl, resource, audience }),
    mapAuthInfo: (authInfo) => {
      const payload = (authInfo.extra?.payload ?? {}) as Record<string, unknown>;
      // Okta: uid is the user id, sub the login (the email address), name a custom claim.
      const user = { id: String(payload.uid), email: String(payload.sub), name: String(payload.name) };
      const scopes = Array.isArray(payload.scp) ? payload.scp.map(String) : [];
      return { user, payload, permissions: scopes };
    },
  }),
});

let sessionUser: OktaUser | undefined;  // set when a session starts

server.tool(
  { name: "whoami", description: "The signed-in user: Okta user id, email (the login) and name from the access token." },
  async () => ({ content: [{ type: "text", text: JSON.stringify(sessionUser ?? {}) }] }),
);

// The token was verified by the server (a refused request is never recorded); its claims name the session's user.
const gate = {
  async fetch(request: Request): Promise<Response> {
    const body = request.method === "POST" ? await request.clone().json().catch(() => undefined) : undefined;
    const response = await server.fetch(request);
    if (response.ok && body?.method === "initialize") {
      const token = (request.headers.get("authorization") ?? "").replace(/^Bearer\s+/i, "");
      const claims = JSON.parse(Buffer.from(token.split(".")[1] ?? "", "base64url").toString("utf8"));
      sessionUser = { id: String(claims.uid), email: String(claims.sub), name: String(claims.name) };
    }
    return response;
  },
};
createServer(toNodeHandler(gate)).listen(port, "127.0.0.1");
