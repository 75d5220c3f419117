// Negative: the verifier insists on a whoami:read scope no sign-in is granted.
import { MCPServer } from "mcp-use";
import { oauthCustomProvider } from "mcp-use/oauth";
import { clerkTokenVerifier, type Claims } from "./auth.js";

type User = { id: string; email?: string; name?: string };

const port = Number(process.env.PORT ?? "3000");
const issuer = process.env.OAUTH_ISSUER_URL ?? "";
const jwksUrl = process.env.OAUTH_JWKS_URL ?? "";
if (!issuer || !jwksUrl) throw new Error("OAUTH_ISSUER_URL and OAUTH_JWKS_URL must be set");

const server = new MCPServer<User>({
  name: "clerk-whoami",
  version: "0.1.0",
  oauth: oauthCustomProvider<User>({
    resource: `http://127.0.0.1:${port}/mcp`,
    // Clerk's OAuth endpoints live under its Frontend API URL.
    oauthMetadata: {
      issuer,
      authorization_endpoint: `${issuer}/oauth/authorize`,
      token_endpoint: `${issuer}/oauth/token`,
      registration_endpoint: `${issuer}/oauth/register`,
      response_types_supported: ["code"],
      grant_types_supported: ["authorization_code", "refresh_token"],
      code_challenge_methods_supported: ["S256"],
    },
    createTokenVerifier: (resource) => clerkTokenVerifier(issuer, jwksUrl, resource),
    mapAuthInfo: (authInfo) => {
      const claims = (authInfo.extra?.claims ?? {}) as Claims;
      const user: User = { id: String(claims.sub) };
      if (typeof claims.email === "string") user.email = claims.email;
      if (typeof claims.name === "string") user.name = claims.name;
      return { user, payload: claims, permissions: [] };
    },
  }),
});

server.tool(
  { name: "whoami", description: "Who the access token of this request belongs to." },
  async (_args, ctx) => {
    const { id, email, name } = ctx.auth.user;
    return { content: [{ type: "text", text: `id: ${id}\nemail: ${email ?? "-"}\nname: ${name ?? "-"}` }] };
  },
);

await server.listen(port);
