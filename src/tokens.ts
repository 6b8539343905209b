/** JWTs as Supabase and PostgREST expect them: HS256, signed with the project's JWT secret. */
import { SignJWT } from 'jose';

const TEN_YEARS_SECONDS = 10 * 365 * 24 * 3600;

function key(jwtSecret: string): Uint8Array {
  return new TextEncoder().encode(jwtSecret);
}

/** The anon or service-role API key of a project, as `supabase start` mints them. */
export async function mintApiKey(jwtSecret: string, role: 'anon' | 'service_role'): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ role })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer('baton')
    .setIssuedAt(now)
    .setExpirationTime(now + TEN_YEARS_SECONDS)
    .sign(key(jwtSecret));
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
export async function mintAgentToken(jwtSecret: string, claims: AgentTokenClaims): Promise<string> {
  const jwt = new SignJWT({ role: 'authenticated', agent_id: claims.agentId })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer('baton')
    .setAudience('authenticated')
    .setJti(claims.tokenId)
    .setIssuedAt();
  if (claims.expiresAt) jwt.setExpirationTime(Math.floor(claims.expiresAt.getTime() / 1000));
  return jwt.sign(key(jwtSecret));
}
