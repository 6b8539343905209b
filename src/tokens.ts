/**
 * JWTs as Supabase and PostgREST expect them. Two ways to sign, one per key system:
 * - a JWT signing key (ES256, a private JWK with a `kid`), the way Supabase projects mint their own
 *   tokens now: the key is imported into the project, and tokens carry its `kid`;
 * - the legacy JWT secret (HS256), for projects that still have it.
 */
import crypto from 'node:crypto';
import { decodeProtectedHeader, exportJWK, generateKeyPair, importJWK, SignJWT, type JWK } from 'jose';
import { z } from 'zod';

const TEN_YEARS_SECONDS = 10 * 365 * 24 * 3600;

/** A private ES256 signing key as a JWK, as `baton keys generate` and `supabase gen signing-key` print it. */
export const SigningKey = z.looseObject({
  kty: z.literal('EC'),
  crv: z.literal('P-256'),
  x: z.string().min(1),
  y: z.string().min(1),
  d: z.string().min(1),
  kid: z.string().min(1),
  alg: z.literal('ES256').optional(),
});
export type SigningKey = z.infer<typeof SigningKey>;

/** What signs tokens: the signing key where there is one, else the legacy secret. */
export type TokenSigner = { signingKey: SigningKey } | { jwtSecret: string };

export async function generateSigningKey(): Promise<SigningKey> {
  const { privateKey } = await generateKeyPair('ES256', { extractable: true });
  const jwk = await exportJWK(privateKey);
  return SigningKey.parse({ ...jwk, kid: crypto.randomUUID(), alg: 'ES256', use: 'sig', key_ops: ['sign', 'verify'] });
}

/** Which tokens a project accepts: ES256 with one of its key ids, and HS256 while the legacy secret is on. */
export interface AcceptedTokens {
  kids: ReadonlySet<string | undefined>;
  legacySecret: boolean;
}

/**
 * Why `token` cannot be one of this project's, judged by its header alone (the signature is checked by
 * whoever verifies it), or undefined if it may be.
 */
export function refuseTokenHeader(token: string, accepted: AcceptedTokens): string | undefined {
  let header: ReturnType<typeof decodeProtectedHeader>;
  try {
    header = decodeProtectedHeader(token);
  } catch {
    return 'this is not a JWT';
  }
  if (header.alg === 'ES256') {
    return accepted.kids.has(header.kid) ? undefined : `the token's key id (kid) "${String(header.kid)}" is not one of this project's signing keys`;
  }
  if (header.alg === 'HS256' && accepted.legacySecret) return undefined;
  return `tokens signed with ${String(header.alg)} are not accepted here`;
}

/** The public half, as a JWKS publishes it. */
export function publicJwk(key: SigningKey): JWK {
  return { kty: key.kty, crv: key.crv, x: key.x, y: key.y, kid: key.kid, alg: 'ES256', use: 'sig', key_ops: ['verify'] };
}

/**
 * Reads a signing key given as JWK text (or a JSON array of JWKs, as supabase/signing_keys.json holds
 * them), saying what is wrong with it if it is not one.
 */
export function parseSigningKey(text: string, source: string): SigningKey {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Error(`${source} is not JSON; it must be a private ES256 JWK (from \`baton keys generate\` or \`supabase gen signing-key --algorithm ES256\`)`);
  }
  // supabase/signing_keys.json holds an array; its first key is the one that signs.
  const parsed = SigningKey.safeParse(Array.isArray(value) ? value[0] : value);
  if (!parsed.success) {
    throw new Error(`${source} is not a private ES256 JWK with a kid (${parsed.error.issues.map((i) => i.path.join('.') || i.message).join(', ')}); `
      + 'generate one with `baton keys generate` or `supabase gen signing-key --algorithm ES256`');
  }
  return parsed.data;
}

async function sign(jwt: SignJWT, signer: TokenSigner): Promise<string> {
  if ('signingKey' in signer) {
    const key = await importJWK({ ...signer.signingKey, key_ops: ['sign'] }, 'ES256');
    return jwt.setProtectedHeader({ alg: 'ES256', typ: 'JWT', kid: signer.signingKey.kid }).sign(key);
  }
  return jwt.setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(new TextEncoder().encode(signer.jwtSecret));
}

/**
 * A token for a database role: the legacy anon or service-role API key (`supabase start` mints them
 * with the JWT secret, valid ten years), or what a gateway puts behind an opaque API key (short-lived).
 */
export async function mintRoleToken(signer: TokenSigner, role: 'anon' | 'service_role', lifetimeSeconds = TEN_YEARS_SECONDS): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return sign(new SignJWT({ role }).setIssuer('baton').setIssuedAt(now).setExpirationTime(now + lifetimeSeconds), signer);
}

export interface AgentTokenClaims {
  agentId: string;
  tokenId: string;
  expiresAt?: Date | null;
}

/**
 * An agent's access token: role `authenticated`, claim `agent_id`, and `jti`, the token id recorded in
 * agent_tokens (which is what revocation flips).
 */
export async function mintAgentToken(signer: TokenSigner, claims: AgentTokenClaims): Promise<string> {
  const jwt = new SignJWT({ role: 'authenticated', agent_id: claims.agentId })
    .setIssuer('baton')
    .setAudience('authenticated')
    .setJti(claims.tokenId)
    .setIssuedAt();
  if (claims.expiresAt) jwt.setExpirationTime(Math.floor(claims.expiresAt.getTime() / 1000));
  return sign(jwt, signer);
}
