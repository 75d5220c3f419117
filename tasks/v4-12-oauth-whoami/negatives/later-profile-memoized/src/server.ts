// Negative: the id comes from each request's token, but the profile (email, name) is read once, on the first
// whoami, and kept: another user's token gets its own id with the first caller's email and name.
import { MCPServer } from "mcp-use";
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

let profile: { email?: string; name?: string } | undefined;  // the profile does not change: read it once

server.tool(
  { name: "whoami", description: "The signed-in user: id, email and name from the access token." },
  async (_args, ctx) => {
    const { id, email, name } = ctx.auth.user;
    profile ??= { email, name };
    return { content: [{ type: "text", text: JSON.stringify({ id, ...profile }) }] };
  },
);

await server.listen(port);
