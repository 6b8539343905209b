/** Each agent has its own tokens; revoking them stops them at once, and nothing else. */
import { SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { createBatonClient } from '../src/client/agent.js';
import { UnauthorizedError } from '../src/errors.js';
import { mintAgentToken, parseSigningKey } from '../src/tokens.js';
import { admin, newAgent, refusal, stack } from './helpers.js';

const clientFor = (token: string) => createBatonClient({ url: stack.SUPABASE_URL, publishableKey: stack.SUPABASE_PUBLISHABLE_KEY, token });

describe('agent tokens', async () => {
  it('stop working the moment they are revoked, while other agents carry on', async () => {
    const alice = await newAgent('alice');
    const bob = await newAgent('bob');
    await alice.client.heartbeat('fine');
    expect(await admin.revokeAgent(alice.id)).toBe(1);
    const err = await refusal(alice.client.heartbeat('still here?'), 'BT006');
    expect(err).toBeInstanceOf(UnauthorizedError);
    expect(err.hint).toMatch(/baton agent token/);
    await refusal(alice.client.listTasks(), 'BT006');
    expect((await bob.client.heartbeat('unaffected')).status_message).toBe('unaffected');
  });

  it('can be replaced by a newly issued one', async () => {
    const alice = await newAgent('alice');
    await admin.revokeAgent(alice.id);
    const fresh = clientFor(await admin.issueToken(alice.id));
    expect((await fresh.heartbeat('back')).id).toBe(alice.id);
  });

  it('refuse a token Baton never issued, even signed with the right secret', async () => {
    const alice = await newAgent('alice');
    const forged = await mintAgentToken({ signingKey: parseSigningKey(stack.BATON_SIGNING_KEY, 'key') }, { agentId: alice.id, tokenId: crypto.randomUUID() });
    expect((await refusal(clientFor(forged).heartbeat(), 'BT006')).message).toMatch(/never issued/);
  });

  it('refuse a token claiming another agent\'s id', async () => {
    const alice = await newAgent('alice');
    const bob = await newAgent('bob');
    const aliceToken = JSON.parse(Buffer.from(alice.token.split('.')[1]!, 'base64url').toString()) as { jti: string };
    const stolen = await mintAgentToken({ signingKey: parseSigningKey(stack.BATON_SIGNING_KEY, 'key') }, { agentId: bob.id, tokenId: aliceToken.jti });
    await refusal(clientFor(stolen).heartbeat(), 'BT006');
  });

  it('refuse a token signed with another secret', async () => {
    const alice = await newAgent('alice');
    const foreign = await new SignJWT({ role: 'authenticated', agent_id: alice.id })
      .setProtectedHeader({ alg: 'HS256' }).setJti(crypto.randomUUID())
      .sign(new TextEncoder().encode('x'.repeat(48)));
    await refusal(clientFor(foreign).heartbeat(), 'PGRST301');
  });

  it('refuse an expired token', async () => {
    const alice = await newAgent('alice');
    const soon = new Date(Date.now() + 1500);
    const token = await admin.issueToken(alice.id, soon);
    expect((await clientFor(token).heartbeat()).id).toBe(alice.id);
    await new Promise((r) => setTimeout(r, 2100));
    const err = await refusal(clientFor(token).heartbeat(), 'BT006');
    expect(err.message).toMatch(/expired/);
  });

  it('is not something an agent can mint for itself', async () => {
    const alice = await newAgent('alice');
    const { error } = await alice.client.db.rpc('issue_agent_token', { p_agent_id: alice.id });
    expect(error?.code).toBe('42501');
    const { error: insert } = await alice.client.db.from('agent_tokens').insert({ agent_id: alice.id });
    expect(insert?.code).toBe('42501');
  });

  it('gives a clear error for an agent registered twice', async () => {
    const alice = await newAgent('alice');
    const err = await refusal(admin.createAgent({ id: alice.id }), 'BT010');
    expect(err.message).toContain('already exists');
  });
});
