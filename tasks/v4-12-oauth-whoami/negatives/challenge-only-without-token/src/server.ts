// Negative: the golden served through a fetch wrapper that drops the Bearer challenge (WWW-Authenticate with
// resource_metadata) from every refusal of a request that carried a token: only a missing token gets it.
import { createServer } from "node:http";
import { MCPServer } from "mcp-use";
import { toNodeHandler } from "mcp-use/node";
import { oauthClerkProvider, type ClerkOAuthUser } from "mcp-use/oauth/clerk";

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

server.tool(
  { name: "whoami", description: "The signed-in user: id, email and name from the access token." },
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
