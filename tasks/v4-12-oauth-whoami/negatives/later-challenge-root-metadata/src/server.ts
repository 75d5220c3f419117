// Negative: the golden behind a gate that writes its own Bearer challenge on every refusal, naming the metadata at
// the origin's root (/.well-known/oauth-protected-resource, RFC 9728's URL for a resource without a path); the
// document itself is served, and right, only at /.well-known/oauth-protected-resource/mcp.
import { createServer } from "node:http";
import { MCPServer } from "mcp-use";
import { oauthClerkProvider, type ClerkOAuthUser } from "mcp-use/oauth/clerk";
import { toNodeHandler } from "mcp-use/node";

const port = Number(process.env.PORT);
const issuer = process.env.OAUTH_ISSUER_URL;
if (!issuer) throw new Error("OAUTH_ISSUER_URL is not set");
const origin = `http://127.0.0.1:${port}`;

const server = new MCPServer<ClerkOAuthUser>({
  name: "oauth-whoami",
  version: "1.0.0",
  // Clerk's issuer is its Frontend API URL, its keys are at <issuer>/.well-known/jwks.json (OAUTH_JWKS_URL).
  // The resource is pinned to the address clients use (mcp-use would otherwise advertise localhost).
  oauth: oauthClerkProvider({ frontendApiUrl: issuer, resource: `${origin}/mcp` }),
});

server.tool(
  { name: "whoami", description: "The signed-in user: id, email and name from the access token." },
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
      `Bearer realm="mcp", resource_metadata="${origin}/.well-known/oauth-protected-resource"`);
    return new Response(response.body, { status: 401, headers });
  },
};
createServer(toNodeHandler(gate)).listen(port, "127.0.0.1");
