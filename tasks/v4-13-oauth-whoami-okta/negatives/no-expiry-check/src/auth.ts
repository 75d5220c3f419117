// Verifies Okta access tokens by hand: RS256 against the JWKS at OAUTH_JWKS_URL (node:crypto), then iss, aud, exp.
import { createPublicKey, verify, type JsonWebKey, type KeyObject } from "node:crypto";
import { OAuthError, OAuthErrorCode, type OAuthAuthInfo, type OAuthTokenVerifier } from "mcp-use/oauth";

export type Claims = Record<string, unknown>;

const invalid = (message: string) => new OAuthError(OAuthErrorCode.InvalidToken, message);

function decodePart(part: string): Claims {
  const value: unknown = JSON.parse(Buffer.from(part, "base64url").toString("utf8"));
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new Error("not a JSON object");
  return value as Claims;
}

// `resource`: this server's MCP URL; `audience`: the authorization server's, which every token must carry.
export function oktaTokenVerifier(issuer: string, jwksUrl: string, audience: string, resource: URL): OAuthTokenVerifier {
  const keys = new Map<string, KeyObject>();

  async function keyFor(kid: string): Promise<KeyObject | undefined> {
    if (!keys.has(kid)) {  // unknown kid: (re)load the key set, the provider may have rotated
      const response = await fetch(jwksUrl);
      if (!response.ok) throw new Error(`JWKS: HTTP ${response.status}`);
      const body = (await response.json()) as { keys: (JsonWebKey & { kid?: string })[] };
      for (const jwk of body.keys) {
        if (jwk.kid) keys.set(jwk.kid, createPublicKey({ key: jwk, format: "jwk" }));
      }
    }
    return keys.get(kid);
  }

  return {
    async verifyAccessToken(token: string): Promise<OAuthAuthInfo> {
      const parts = token.split(".");
      if (parts.length !== 3) throw invalid("malformed token");
      let header: Claims;
      let claims: Claims;
      try {
        header = decodePart(parts[0]);
        claims = decodePart(parts[1]);
      } catch {
        throw invalid("malformed token");
      }
      if (header.alg !== "RS256" || typeof header.kid !== "string") throw invalid("not an RS256 token");
      const key = await keyFor(header.kid);
      const signed = Buffer.from(`${parts[0]}.${parts[1]}`);
      if (!key || !verify("RSA-SHA256", signed, key, Buffer.from(parts[2], "base64url"))) {
        throw invalid("bad signature");
      }
      const now = Date.now() / 1000;
      if (claims.iss !== issuer) throw invalid("wrong issuer");
      if (claims.aud !== audience) throw invalid("wrong audience");
      const leeway = 86400; // generous clock skew
      if (typeof claims.exp !== "number" || claims.exp + leeway <= now) throw invalid("token expired");
      if (typeof claims.nbf === "number" && claims.nbf > now + 30) throw invalid("token not yet valid");
      if (typeof claims.sub !== "string" || !claims.sub) throw invalid("token has no subject");
      return {
        token,
        clientId: String(claims.cid ?? ""),
        scopes: Array.isArray(claims.scp) ? claims.scp.map(String) : [],
        expiresAt: claims.exp + leeway,
        resource,
        extra: { payload: claims },
      };
    },
  };
}
