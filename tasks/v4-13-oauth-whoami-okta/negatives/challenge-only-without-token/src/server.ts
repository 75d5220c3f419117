// Negative: the golden served through a fetch wrapper that drops the Bearer challenge (WWW-Authenticate with
// resource_metadata) from every refusal of a request that carried a token: only a missing token gets it.
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

// A client that sent a token already knows where to sign in: a token that does not verify gets a plain JSON
// error instead of the Bearer challenge, which only a request without a token needs.
const gate = {
  async fetch(request: Request): Promise<Response> {
    const response = await server.fetch(request);
    if (response.status === 401 && request.headers.has("authorization")) {
      return Response.json({ error: "invalid_token", error_description: "The access token is not valid." },
        { status: 401 });
    }
    return response;
  },
};
createServer(toNodeHandler(gate)).listen(port, "127.0.0.1");
