import { MCPServer } from "mcp-use";
import { oauthClerkProvider } from "mcp-use/oauth/clerk";

const issuerUrl = process.env.OAUTH_ISSUER_URL;
const jwksUrl = process.env.OAUTH_JWKS_URL;
const port = Number(process.env.PORT);
if (!issuerUrl || !jwksUrl || !Number.isInteger(port)) {
  throw new Error("PORT, OAUTH_ISSUER_URL and OAUTH_JWKS_URL are required");
}
// The Clerk adapter verifies against <frontend API>/.well-known/jwks.json, which is
// what OAUTH_JWKS_URL points at for Clerk; warn loudly on a mismatching setup.
const expectedJwks = new URL(".well-known/jwks.json", issuerUrl.endsWith("/") ? issuerUrl : `${issuerUrl}/`).href;
if (new URL(jwksUrl).href !== expectedJwks) {
  console.warn(`OAUTH_JWKS_URL (${jwksUrl}) is not the Clerk JWKS of ${issuerUrl}`);
}

const server = new MCPServer({
  name: "whoami-clerk-adapter",
  version: "1.0.0",
  oauth: oauthClerkProvider({
    frontendApiUrl: issuerUrl,
    resource: `http://127.0.0.1:${port}/mcp`,
  }),
});

server.tool({ name: "whoami", description: "Who is calling (from the bearer token)." }, async (_input, ctx) => {
  const claims = ctx.auth.payload;
  const who = {
    id: ctx.auth.user.id,
    email: typeof claims.email === "string" ? claims.email : null,
    name: typeof claims.name === "string" ? claims.name : null,
  };
  return { content: [{ type: "text", text: JSON.stringify(who, null, 2) }] };
});

await server.listen(port, { host: "127.0.0.1" });
