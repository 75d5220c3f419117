import { createRemoteJWKSet, jwtVerify, type JWTPayload } from "jose";
import { MCPServer } from "mcp-use";
import { OAuthError, OAuthErrorCode, oauthCustomProvider, type OAuthMetadata, type OAuthTokenVerifier } from "mcp-use/oauth";

const { PORT, OAUTH_ISSUER_URL, OAUTH_JWKS_URL, OAUTH_AUDIENCE } = process.env;
if (!PORT || !OAUTH_ISSUER_URL || !OAUTH_JWKS_URL || !OAUTH_AUDIENCE) {
  throw new Error("PORT, OAUTH_ISSUER_URL, OAUTH_JWKS_URL and OAUTH_AUDIENCE must all be set");
}
const issuer = OAUTH_ISSUER_URL;
const audience = OAUTH_AUDIENCE;
const resource = new URL(`http://127.0.0.1:${PORT}/mcp`);
const keys = createRemoteJWKSet(new URL(OAUTH_JWKS_URL));

interface OktaClaims extends JWTPayload {
  uid?: string;
  cid?: string;
  scp?: string[];
  name?: string;
}

/** Verifies Okta custom-authorization-server access tokens with jose. */
const verifier: OAuthTokenVerifier = {
  async verifyAccessToken(token) {
    let claims: OktaClaims;
    try {
      ({ payload: claims } = await jwtVerify<OktaClaims>(token, keys, {
        issuer,
        audience,
        algorithms: ["RS256"],
        requiredClaims: ["exp", "sub", "uid"],
      }));
    } catch (err) {
      throw new OAuthError(OAuthErrorCode.InvalidToken, `invalid access token: ${(err as Error).message}`);
    }
    if (!claims.scp?.includes("openid")) {
      throw new OAuthError(OAuthErrorCode.InvalidToken, "access token lacks the openid scope");
    }
    return {
      token,
      clientId: claims.cid ?? "",
      scopes: Array.isArray(claims.scp) ? claims.scp : [],
      expiresAt: claims.exp,
      resource,
      extra: { payload: claims },
    };
  },
};

// The authorization server's own endpoints (authorize, token, dynamic registration).
const discovered = (await (await fetch(`${issuer}/.well-known/openid-configuration`)).json()) as OAuthMetadata;

type Caller = { uid: string; login: string; displayName: string };

const server = new MCPServer<Caller>({
  name: "whoami-okta-jose",
  version: "1.0.0",
  oauth: oauthCustomProvider<Caller>({
    resource,
    createTokenVerifier: () => verifier,
    oauthMetadata: { ...discovered, issuer },
    mapAuthInfo: (info) => {
      const claims = info.extra?.payload as OktaClaims;
      return {
        user: { uid: String(claims.uid), login: String(claims.sub), displayName: String(claims.name ?? "") },
        payload: claims as Record<string, unknown>,
        permissions: [],
      };
    },
  }),
});

server.tool({ name: "whoami", description: "Okta identity of the caller" }, (_args, ctx) => {
  const { uid, login, displayName } = ctx.auth.user;
  return { content: [{ type: "text", text: JSON.stringify({ id: uid, email: login, name: displayName }) }] };
});

await server.listen(Number(PORT), { host: "127.0.0.1" });
