/**
 * Which of Supabase's key systems the suite acts with: the new one (publishable and secret keys, ES256
 * agent tokens), or with BATON_TEST_KEYS=legacy the legacy one (anon and service-role keys, HS256
 * tokens), so the whole suite can prove either. The key of the other system is blanked, so nothing
 * set in the caller's environment leaks in.
 */
import { createAdminClient } from '../src/client/admin.js';
import type { StackEnv } from '../src/stack/state.js';
import { parseSigningKey } from '../src/tokens.js';

export const legacyKeys = process.env.BATON_TEST_KEYS === 'legacy';

type Keys = Pick<StackEnv, 'SUPABASE_URL' | 'SUPABASE_PUBLISHABLE_KEY' | 'SUPABASE_ANON_KEY'>;

/** The API key an agent's client sends. */
export const agentKey = (env: Keys) => (legacyKeys ? { anonKey: env.SUPABASE_ANON_KEY } : { publishableKey: env.SUPABASE_PUBLISHABLE_KEY });

/** The same, as the environment of an agent's process. */
export const agentKeyEnv = (env: Keys) => (legacyKeys
  ? { SUPABASE_ANON_KEY: env.SUPABASE_ANON_KEY, SUPABASE_PUBLISHABLE_KEY: '' }
  : { SUPABASE_PUBLISHABLE_KEY: env.SUPABASE_PUBLISHABLE_KEY, SUPABASE_ANON_KEY: '' });

/** The environment of an operator's process: its API key and what signs agent tokens. */
export const operatorEnv = (env: StackEnv) => (legacyKeys
  ? { SUPABASE_SERVICE_ROLE_KEY: env.SUPABASE_SERVICE_ROLE_KEY, SUPABASE_JWT_SECRET: env.SUPABASE_JWT_SECRET, SUPABASE_SECRET_KEY: '', BATON_SIGNING_KEY: '' }
  : { SUPABASE_SECRET_KEY: env.SUPABASE_SECRET_KEY, BATON_SIGNING_KEY: env.BATON_SIGNING_KEY, SUPABASE_SERVICE_ROLE_KEY: '', SUPABASE_JWT_SECRET: '' });

export const adminFor = (env: StackEnv) => createAdminClient(legacyKeys
  ? { url: env.SUPABASE_URL, serviceRoleKey: env.SUPABASE_SERVICE_ROLE_KEY, jwtSecret: env.SUPABASE_JWT_SECRET }
  : { url: env.SUPABASE_URL, secretKey: env.SUPABASE_SECRET_KEY, signingKey: parseSigningKey(env.BATON_SIGNING_KEY, 'BATON_SIGNING_KEY') });
