// Alternate legitimate solution: Okta's endpoint layout derived from the issuer (no discovery request), entry
// index.ts at the root, and a whoami with an outputSchema: structured content beside the JSON text.
import { MCPServer } from "mcp-use";
import { createJwtVerifier, oauthCustomProvider } from "mcp-use/oauth";
import { z } from "zod";

const { PORT, OAUTH_ISSUER_URL, OAUTH_JWKS_URL, OAUTH_AUDIENCE } = process.env;
if (!PORT || !OAUTH_ISSUER_URL || !OAUTH_JWKS_URL || !OAUTH_AUDIENCE) {
  throw new Error("PORT, OAUTH_ISSUER_URL, OAUTH_JWKS_URL and OAUTH_AUDIENCE are required");
}
const issuer = OAUTH_ISSUER_URL.replace(/\/+$/, "");
const orgUrl = new URL(issuer).origin; // an Okta org: custom authorization servers live at <org>/oauth2/<id>

interface Caller {
  id: string;
  email: string;
  name: string;
}

const server = new MCPServer<Caller>({
  name: "okta-whoami",
  version: "0.2.0",
  oauth: oauthCustomProvider<Caller>({
    resource: `http://127.0.0.1:${PORT}/mcp`,
    oauthMetadata: {
      issuer,
      authorization_endpoint: `${issuer}/v1/authorize`,
      token_endpoint: `${issuer}/v1/token`,
      registration_endpoint: `${orgUrl}/oauth2/v1/clients`,
      jwks_uri: OAUTH_JWKS_URL,
      response_types_supported: ["code"],
      code_challenge_methods_supported: ["S256"],
    },
    createTokenVerifier: (resource) =>
      createJwtVerifier({ issuer, jwksUrl: new URL(OAUTH_JWKS_URL), resource, audience: OAUTH_AUDIENCE, algorithms: ["RS256"] }),
    mapAuthInfo: (authInfo) => {
      const claims = (authInfo.extra?.payload ?? {}) as { uid?: unknown; sub?: unknown; name?: unknown };
      if (typeof claims.uid !== "string" || typeof claims.sub !== "string") throw new Error("not an Okta user token");
      return {
        user: { id: claims.uid, email: claims.sub, name: typeof claims.name === "string" ? claims.name : "" },
        payload: claims as Record<string, unknown>,
        permissions: [],
      };
    },
  }),
});

server.tool(
  {
    name: "whoami",
    title: "Who am I",
    description: "The Okta user the access token of this request belongs to.",
    outputSchema: z.object({ id: z.string(), email: z.string(), name: z.string() }),
    annotations: { readOnlyHint: true },
  },
  async (_args, ctx) => {
    const caller = { ...ctx.auth.user };
    return { content: [{ type: "text", text: JSON.stringify(caller) }], structuredContent: caller };
  },
);

await server.listen(Number(PORT));
