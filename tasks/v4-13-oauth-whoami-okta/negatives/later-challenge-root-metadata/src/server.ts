// Negative: the golden behind a gate that writes its own Bearer challenge on every refusal, naming the metadata at
// the origin's root (/.well-known/oauth-protected-resource, RFC 9728's URL for a resource without a path); the
// document itself is served, and right, only at /.well-known/oauth-protected-resource/mcp.
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

server.tool(
  { name: "whoami", description: "The signed-in user: Okta user id, email (the login) and name from the access token." },
  async (_args, ctx) => {
    const { id, email, name } = ctx.auth.user;
    return { content: [{ type: "text", text: JSON.stringify({ id, email, name }) }] };
  },
);

// One challenge for every refusal, with a realm and the metadata URL spelled out.
const gate = {
  async fetch(request: Request): Promise<Response> {
    const response = await server.fetch(request);
    if (response.status !== 401) return response;
    const headers = new Headers(response.headers);
    headers.set("WWW-Authenticate",
      `Bearer realm="mcp", resource_metadata="http://127.0.0.1:${port}/.well-known/oauth-protected-resource"`);
    return new Response(response.body, { status: 401, headers });
  },
};
createServer(toNodeHandler(gate)).listen(port, "127.0.0.1");
