// Negative: the caller is recorded when a session is initialized, in one variable for the whole server, and
// whoami answers it: right while one session is open, but once another user's session starts, an older session
// is answered with the newer session's user.
import { createServer } from "node:http";
import { MCPServer } from "mcp-use";
import { oauthClerkProvider, type ClerkOAuthUser } from "mcp-use/oauth/clerk";
import { toNodeHandler } from "mcp-use/node";

const port = Number(process.env.PORT);
const issuer = process.env.OAUTH_ISSUER_URL;
if (!issuer) throw new Error("OAUTH_ISSUER_URL is not set");

const server = new MCPServer<ClerkOAuthUser>({
  name: "oauth-whoami",
  version: "1.0.0",
  // Clerk's issuer is its Frontend API URL, its keys are at <issuer>/.well-known/jwks.json (OAUTH_JWKS_URL).
  // The resource is pinned to the address clients use (mcp-use would otherwise advertise localhost).
  oauth: oauthClerkProvider({ frontendApiUrl: issuer, resource: `http://127.0.0.1:${port}/mcp` }),
});

let sessionUser: { id: string; email?: string; name?: string } | undefined;  // set when a session starts

server.tool(
  { name: "whoami", description: "The signed-in user: id, email and name from the access token." },
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
      sessionUser = { id: claims.sub, email: claims.email, name: claims.name };
    }
    return response;
  },
};
createServer(toNodeHandler(gate)).listen(port, "127.0.0.1");
