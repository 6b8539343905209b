/**
 * Both of Supabase's key systems on the embedded stack: opaque publishable and secret keys with ES256
 * agent tokens (the default, which the rest of the suite uses), and the legacy anon and service-role
 * keys with HS256 tokens. Tokens the project did not sign are refused, however they are dressed up.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { promisify } from 'node:util';
import { generateKeyPair, importJWK, SignJWT } from 'jose';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createAdminClient } from '../src/client/admin.js';
import { createBatonClient } from '../src/client/agent.js';
import { loadOrCreateSecrets } from '../src/stack/state.js';
import { generateSigningKey, mintAgentToken, mintRoleToken, parseSigningKey, publicJwk } from '../src/tokens.js';
import { baton } from './cli.js';
import { makeStackDir } from './global-setup.js';
import { freePort } from '../src/stack/ports.js';
import { admin, refusal, stack, uniqueId } from './helpers.js';

const run = promisify(execFile);
const require = createRequire(import.meta.url);
const signingKey = parseSigningKey(stack.BATON_SIGNING_KEY, 'BATON_SIGNING_KEY');
const rest = (pathname: string, headers: Record<string, string>) => fetch(`${stack.SUPABASE_URL}/rest/v1/${pathname}`, { headers });

describe('the legacy keys', () => {
  it('still run the whole loop: anon and service-role keys, HS256 agent tokens', async () => {
    const legacy = createAdminClient({ url: stack.SUPABASE_URL, serviceRoleKey: stack.SUPABASE_SERVICE_ROLE_KEY, jwtSecret: stack.SUPABASE_JWT_SECRET });
    const agent = async (prefix: string) => {
      const id = uniqueId(prefix);
      const { token } = await legacy.createAgent({ id });
      expect(JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString())).toMatchObject({ alg: 'HS256' });
      return { id, client: createBatonClient({ url: stack.SUPABASE_URL, anonKey: stack.SUPABASE_ANON_KEY, token }) };
    };
    const sender = await agent('legacy-sender');
    const worker = await agent('legacy-worker');
    const task = await sender.client.handoff({ to: worker.id, title: 'the old way' });
    const held = await worker.client.claim(task.id, { start: true });
    await worker.client.complete(held.id, held.claim_token, { status: 'success', summary: 'done' });
    expect(await sender.client.getTask(task.id)).toMatchObject({ status: 'completed', result: { summary: 'done' } });
    // An ES256 token behind the legacy anon key works as well: the key is only the gateway's ticket.
    const { token } = await admin.createAgent({ id: uniqueId('mixed') });
    const mixed = createBatonClient({ url: stack.SUPABASE_URL, anonKey: stack.SUPABASE_ANON_KEY, token });
    expect((await mixed.heartbeat('mixed keys')).id).toBe(mixed.agentId);
  });
});

describe('opaque API keys', () => {
  it('stand for the anon and service roles, and an unknown one is refused', async () => {
    const asSecret = await rest('agents?select=id&limit=1', { apikey: stack.SUPABASE_SECRET_KEY });
    expect(asSecret.status).toBe(200);
    // The anon role reaches no Baton table: the pre-request check says so.
    const asPublishable = await rest('agents?select=id&limit=1', { apikey: stack.SUPABASE_PUBLISHABLE_KEY });
    expect(asPublishable.status).toBe(401);
    expect(await asPublishable.json()).toMatchObject({ code: '42501' });
    // supabase-js sends the key as the bearer too; that is the same as no token.
    const bearer = await rest('agents?select=id&limit=1', { apikey: stack.SUPABASE_SECRET_KEY, authorization: `Bearer ${stack.SUPABASE_SECRET_KEY}` });
    expect(bearer.status).toBe(200);
    const unknown = await rest('agents?select=id', { apikey: 'sb_publishable_not-this-projects' });
    expect(unknown.status).toBe(401);
    expect(await unknown.json()).toMatchObject({ message: 'Invalid API key' });
  });

  it('serve the public signing keys, and never the private one', async () => {
    const res = await fetch(`${stack.SUPABASE_URL}/auth/v1/.well-known/jwks.json`);
    expect(res.status).toBe(200);
    const { keys } = await res.json() as { keys: Array<Record<string, unknown>> };
    expect(keys).toEqual([publicJwk(signingKey)]);
    expect(keys[0]).not.toHaveProperty('d');
  });
});

describe('agent tokens', () => {
  const claims = async () => {
    const { token } = await admin.createAgent({ id: uniqueId('victim') });
    return JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>;
  };
  const call = (token: string) => rest('rpc/send_heartbeat', { apikey: stack.SUPABASE_PUBLISHABLE_KEY, authorization: `Bearer ${token}` });

  it('are ES256 with the signing key\'s kid, and a forged one is refused every way', async () => {
    const victim = await claims();
    const good = await new SignJWT(victim).setProtectedHeader({ alg: 'ES256', kid: signingKey.kid })
      .sign(await importJWK({ ...signingKey, key_ops: ['sign'] }, 'ES256'));
    expect((await call(good)).status).toBe(405); // reached PostgREST as the agent: a GET on an RPC that writes
    const other = await generateKeyPair('ES256', { extractable: true });
    const forgeries: Record<string, string> = {
      'another key under the project\'s kid': await new SignJWT(victim).setProtectedHeader({ alg: 'ES256', kid: signingKey.kid }).sign(other.privateKey),
      'the right key under another kid': await new SignJWT(victim).setProtectedHeader({ alg: 'ES256', kid: 'not-a-project-kid' })
        .sign(await importJWK({ ...signingKey, key_ops: ['sign'] }, 'ES256')),
      'no kid': await new SignJWT(victim).setProtectedHeader({ alg: 'ES256' }).sign(other.privateKey),
      'HS256 with the public key as its secret': await new SignJWT(victim).setProtectedHeader({ alg: 'HS256', kid: signingKey.kid })
        .sign(new TextEncoder().encode(JSON.stringify(publicJwk(signingKey)))),
      'HS256 with the public key\'s x as its secret': await new SignJWT(victim).setProtectedHeader({ alg: 'HS256' })
        .sign(new TextEncoder().encode(signingKey.x)),
      'alg none': `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${Buffer.from(JSON.stringify(victim)).toString('base64url')}.`,
    };
    for (const [how, token] of Object.entries(forgeries)) {
      const res = await call(token);
      expect(res.status, how).toBe(401);
    }
    // Through the client, the refusal says what to check.
    const forged = createBatonClient({ url: stack.SUPABASE_URL, publishableKey: stack.SUPABASE_PUBLISHABLE_KEY, token: forgeries['another key under the project\'s kid']! });
    const err = await refusal(forged.heartbeat(), 'PGRST301');
    expect(err.name).toBe('UnauthorizedError');
    expect(err.hint).toMatch(/BATON_AGENT_TOKEN: it must be a token minted for this project/);
    // A real signature on a token id the project never issued is still refused by the database.
    const unissued = await mintAgentToken({ signingKey }, { agentId: String(victim.agent_id), tokenId: crypto.randomUUID() });
    const refused = await rest('task_handoffs?select=id&limit=1', { apikey: stack.SUPABASE_PUBLISHABLE_KEY, authorization: `Bearer ${unissued}` });
    expect(await refused.json()).toMatchObject({ code: 'BT006' });
  });

  it('are signed by whatever key the operator holds: one from the CLI, or the Supabase CLI\'s JWK format', async () => {
    const made = await baton(['keys', 'generate']);
    expect(made.code).toBe(0);
    const key = parseSigningKey(made.stdout, 'the generated key');
    expect(key).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256' });
    const shown = await baton(['keys', 'public'], { BATON_SIGNING_KEY: made.stdout.trim() });
    expect(JSON.parse(shown.stdout)).toEqual({ keys: [publicJwk(key)] });
    const missing = await baton(['keys', 'public'], { BATON_SIGNING_KEY: '' });
    expect(missing).toMatchObject({ code: 2 });
    const broken = await baton(['keys', 'public'], { BATON_SIGNING_KEY: '{"kty":"EC"}' });
    expect(broken.code).toBe(2);
    expect(broken.stderr).toMatch(/not a private ES256 JWK with a kid/);
    // A key from the real Supabase CLI, alone or as supabase/signing_keys.json holds it (an array).
    const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-sbkey-'));
    onTestFinished(() => fs.rmSync(cwd, { recursive: true, force: true }));
    const cli = await run(process.execPath, [require.resolve('supabase/dist/supabase.js'), 'gen', 'signing-key', '--algorithm', 'ES256'], { cwd });
    const jwk = cli.stdout.split('\n')[0]!;
    const fromCli = parseSigningKey(jwk, 'the Supabase CLI\'s key');
    expect(parseSigningKey(`[${jwk}]`, 'signing_keys.json')).toEqual(fromCli);
    // It signs agent tokens; this project does not know its kid, so the gateway refuses them.
    const foreign = await mintAgentToken({ signingKey: fromCli }, { agentId: 'anyone', tokenId: crypto.randomUUID() });
    expect((await call(foreign)).status).toBe(401);
  });
});

describe('a stack made before the new keys', () => {
  it('gets a publishable key, a secret key and a signing key, and keeps its legacy keys', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-keys-'));
    try {
      const old = { jwtSecret: 'x'.repeat(48), anonKey: 'old-anon', serviceRoleKey: 'old-service', dbPassword: 'db', authenticatorPassword: 'auth' };
      fs.writeFileSync(path.join(dir, 'secrets.json'), JSON.stringify(old));
      const upgraded = await loadOrCreateSecrets(dir);
      expect(upgraded).toMatchObject(old);
      expect(upgraded.publishableKey).toMatch(/^sb_publishable_/);
      expect(upgraded.secretKey).toMatch(/^sb_secret_/);
      expect(upgraded.signingKey.kid).toBeTruthy();
      expect(await loadOrCreateSecrets(dir)).toEqual(upgraded);
      expect(fs.statSync(path.join(dir, 'secrets.json')).mode & 0o777).toBe(0o600);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('starts from the CLI with its old secrets file, and then prints both key styles', async () => {
    const dir = makeStackDir('baton-old-stack-');
    const jwtSecret = 'y'.repeat(48);
    const old = {
      jwtSecret, anonKey: await mintRoleToken({ jwtSecret }, 'anon'), serviceRoleKey: await mintRoleToken({ jwtSecret }, 'service_role'),
      dbPassword: 'db-old', authenticatorPassword: 'auth-old',
    };
    fs.writeFileSync(path.join(dir, 'secrets.json'), JSON.stringify(old), { mode: 0o600 });
    const apiPort = await freePort();
    try {
      const started = await baton(['stack', 'start', '--dir', dir, '--api-port', String(apiPort), '--db-port', String(await freePort([apiPort]))]);
      expect(started.code, started.stderr).toBe(0);
      const env = JSON.parse((await baton(['stack', 'env', '--dir', dir, '--json'])).stdout) as Record<string, string>;
      expect(env).toMatchObject({ SUPABASE_ANON_KEY: old.anonKey, SUPABASE_JWT_SECRET: old.jwtSecret });
      // The old anon key still works against it.
      const res = await fetch(`http://127.0.0.1:${apiPort}/rest/v1/`, { headers: { apikey: old.anonKey } });
      expect(res.status).toBe(200);
      expect(env.SUPABASE_PUBLISHABLE_KEY).toMatch(/^sb_publishable_/);
    } finally {
      await baton(['stack', 'stop', '--dir', dir]);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('generates keys that are distinct every time', async () => {
    const [a, b] = await Promise.all([generateSigningKey(), generateSigningKey()]);
    expect(a.kid).not.toBe(b.kid);
    expect(a.d).not.toBe(b.d);
  });
});
