/** Presence, messages, operator commands, help and the protocol's wrapper scripts, through the built CLI. */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Agent, AgentPresence, Message, Task } from '../src/schemas.js';
import { baton, cliAs, cliPath, parsed, type CliResult } from './cli.js';
import { admin, newAgent, stack, uniqueId } from './helpers.js';
import { agentKeyEnv, operatorEnv } from './keys-mode.js';

const operator = (...args: string[]) => baton(args, {
  SUPABASE_URL: stack.SUPABASE_URL, ...operatorEnv(stack),
});

describe('presence', async () => {
  const capability = `presence-${Date.now()}`;
  const online = await newAgent('online', { capabilities: [capability, 'extra'] });
  const offline = await newAgent('offline', { capabilities: [capability] });
  const asOnline = cliAs(online.token, stack);

  it('sets the status line with a heartbeat', async () => {
    const text = await asOnline('status', 'crunching numbers');
    expect(text.stdout).toBe(`${online.id}: crunching numbers (heartbeat sent)\n`);
    expect(Agent.parse(parsed(await asOnline('status', 'still crunching', '--json')))).toMatchObject({ status_message: 'still crunching', is_active: true });
  });

  it('discovers online agents by capability, and offline ones with --all', async () => {
    const found = z.array(AgentPresence).parse(parsed(await asOnline('discover', '--capability', capability, '--json')));
    expect(found.map((a) => a.id)).toEqual([online.id]);
    const all = z.array(AgentPresence).parse(parsed(await asOnline('discover', '-c', capability, '--all', '--json')));
    expect(all.map((a) => [a.id, a.is_online])).toEqual([[offline.id, false], [online.id, true]].sort());
    const table = await asOnline('discover', '-c', capability);
    expect(table.stdout).toMatch(/^ID\s+NAME\s+ONLINE\s+CAPABILITIES\s+SKILLS\s+STATUS\s+HEARD\s+WAKES$/m);
    expect(table.stdout).toContain('still crunching');
  });
});

describe('messages', async () => {
  const alice = await newAgent('alice');
  const bob = await newAgent('bob');
  const asAlice = cliAs(alice.token, stack);
  const asBob = cliAs(bob.token, stack);

  it('sends a direct message that the inbox shows and marks read', async () => {
    const sent = Message.parse(parsed(await asAlice('message', bob.id, 'hello bob', '--json')));
    expect(sent).toMatchObject({ from_agent: alice.id, to_agent: bob.id, body: { text: 'hello bob' } });
    expect((await asAlice('message', bob.id, 'second')).stdout).toMatch(/^Sent [0-9a-f]{8} to bob-/);
    const unread = z.array(Message).parse(parsed(await asBob('inbox', '--unread', '--json')));
    expect(unread.map((m) => m.id)).toContain(sent.id);
    expect(parsed(await asBob('inbox', '--unread', '--json'))).toEqual([]);
    const text = await asBob('inbox');
    expect(text.stdout).toMatch(/^ID\s+AGE\s+FROM\s+TO\s+KIND\s+TASK\s+TEXT$/m);
    expect(text.stdout).toContain('hello bob');
  });

  it('sends to everyone with --all, threads on a task, and replies', async () => {
    const everyone = Message.parse(parsed(await asAlice('message', '--all', 'deploy freeze', '--json')));
    expect(everyone.to_agent).toBeNull();
    const task = Task.parse(parsed(await asAlice('handoff', bob.id, 'threaded', '--allow-offline', '--json')));
    const onTask = Message.parse(parsed(await asBob('message', alice.id, 'on it', '--task', task.id.slice(0, 8), '--reply-to', everyone.id, '--json')));
    expect(onTask).toMatchObject({ task_id: task.id, reply_to_id: everyone.id });
    const thread = z.array(Message).parse(parsed(await asAlice('inbox', '--task', task.id, '--json')));
    expect(thread.map((m) => m.id)).toEqual([onTask.id]);
  });

  it('refuses a message without text or recipient with exit 2', async () => {
    expect((await asAlice('message', bob.id)).code).toBe(2);
    expect((await asAlice('message', '--all')).code).toBe(2);
    expect((await asAlice('message', '--all', 'a', 'b')).code).toBe(2);
    expect((await asAlice('message', 'nobody-qq', 'hi')).code).toBe(1);
  });
});

describe('operator commands', () => {
  it('create, show, list, token and revoke agents', async () => {
    const id = uniqueId('ops');
    const created = parsed(await operator('agent', 'create', id, '-c', 'a,b', '-c', 'c', '--display-name', 'Ops Bot', '--max-concurrent', '2', '--json'));
    expect(created).toMatchObject({ id, token: expect.any(String), agent: { capabilities: ['a', 'b', 'c'], display_name: 'Ops Bot', max_concurrent: 2 } });
    expect((await operator('agent', 'show', id)).stdout).toMatch(/^capabilities\s+a, b, c$/m);
    expect(z.array(Agent).parse(parsed(await operator('agent', 'list', '--json'))).map((a) => a.id)).toContain(id);
    const second = parsed(await operator('agent', 'token', id, '--expires-in', '1d', '--json'));
    const asAgent = cliAs(second.token, stack);
    expect((await asAgent('status', 'alive')).code).toBe(0);
    expect((await operator('agent', 'revoke', id)).stdout).toBe(`Revoked 2 token(s) of ${id}; they stop working now.\n`);
    const refused = await asAgent('status', 'alive?');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/was revoked/);
    const twice = await operator('agent', 'create', id);
    expect(twice.code).toBe(1);
    expect(twice.stderr).toMatch(/already exists/);
    expect((await operator('agent', 'create', 'Bad Name')).code).toBe(1);
    expect((await operator('agent', 'token', id, '--expires-in', 'soon')).code).toBe(2);
    expect((await operator('agent', 'show', 'nobody-zz')).code).toBe(1);
  });

  it('need the service-role key', async () => {
    const result = await baton(['agent', 'list'], { SUPABASE_URL: stack.SUPABASE_URL, SUPABASE_ANON_KEY: stack.SUPABASE_ANON_KEY });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/SUPABASE_SECRET_KEY is not set/);
  });
});

describe('configuration', () => {
  it('comes from flags, then the environment, then .env in the working folder', async () => {
    const fromFile = await newAgent('dotenv');
    const fromEnv = await newAgent('envvar');
    const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-dotenv-'));
    try {
      fs.writeFileSync(path.join(folder, '.env'), [
        `SUPABASE_URL=${stack.SUPABASE_URL}`, `SUPABASE_ANON_KEY=${stack.SUPABASE_ANON_KEY}`, `BATON_AGENT_TOKEN=${fromFile.token}`,
      ].join('\n'));
      const viaFile = await baton(['status', 'configured by .env', '--json'], { SUPABASE_ANON_KEY: '' }, folder);
      expect(Agent.parse(parsed(viaFile)).id).toBe(fromFile.id);
      const viaEnv = await baton(['status', 'configured by env', '--json'], { SUPABASE_ANON_KEY: '', BATON_AGENT_TOKEN: fromEnv.token }, folder);
      expect(Agent.parse(parsed(viaEnv)).id).toBe(fromEnv.id);
      const badFlag = await baton(['status', 'x', '--url', 'http://127.0.0.1:9'], { SUPABASE_ANON_KEY: '' }, folder);
      expect(badFlag.code, 'unreachable: nothing decided, 75').toBe(75);
      expect(badFlag.stderr).toMatch(/could not reach http:\/\/127\.0\.0\.1:\d+: .*Check SUPABASE_URL.*baton stack status/);
    } finally {
      fs.rmSync(folder, { recursive: true, force: true });
    }
  });
});

describe('an agent\'s settings file', () => {
  it('is written by agent create --write-env, readable by its owner only, and read through BATON_ENV_FILE', async () => {
    const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-envfile-'));
    try {
      const id = uniqueId('envfile');
      const file = path.join(folder, 'agents', `${id}.env`);
      const created = await baton(['agent', 'create', id, '-c', 'files', '--write-env', file],
        { SUPABASE_URL: stack.SUPABASE_URL, ...operatorEnv(stack), ...agentKeyEnv(stack) });
      expect(created.code, created.stderr).toBe(0);
      expect(created.stdout).not.toMatch(/eyJ/); // the token went to the file, not the terminal
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);
      const written = fs.readFileSync(file, 'utf8');
      expect(written).toMatch(new RegExp(`^SUPABASE_URL=${stack.SUPABASE_URL}$`, 'm'));
      expect(written).toMatch(new RegExp(`^BATON_AGENT_ID=${id}$`, 'm'));
      expect(written).not.toMatch(/SECRET|SERVICE_ROLE|SIGNING|JWT_SECRET/);

      // Nothing else set, from another folder: the file alone makes the command act as the agent.
      const bare = { SUPABASE_URL: '', SUPABASE_PUBLISHABLE_KEY: '', SUPABASE_ANON_KEY: '', BATON_AGENT_TOKEN: '' };
      const viaFile = await baton(['status', 'configured by a file', '--json'], { ...bare, BATON_ENV_FILE: file }, os.tmpdir());
      expect(Agent.parse(parsed(viaFile)).id).toBe(id);
      const health = await baton(['health'], { ...bare, BATON_ENV_FILE: file }, os.tmpdir());
      expect(health.code, health.stderr).toBe(0);
      expect(health.stdout).toMatch(/answers and accepts the agent token/);

      // An existing file is never overwritten, and the refusal comes before anything is registered.
      const again = await baton(['agent', 'create', uniqueId('envfile'), '--write-env', file], { SUPABASE_URL: stack.SUPABASE_URL, ...operatorEnv(stack), ...agentKeyEnv(stack) });
      expect(again.code).toBe(2);
      expect(again.stderr).toMatch(/exists already; it is left as it is/);
      expect(fs.readFileSync(file, 'utf8')).toBe(written);

      // The secret key alone cannot make an agent's file: it would have to carry the secret key.
      const secretOnly = await operator('agent', 'create', uniqueId('envfile'), '--write-env', path.join(folder, 'other.env'));
      expect(secretOnly.code).toBe(2);
      expect(secretOnly.stderr).toMatch(/publishable key/);
      expect(fs.existsSync(path.join(folder, 'other.env'))).toBe(false);

      const missing = await baton(['status'], { ...bare, BATON_ENV_FILE: path.join(folder, 'nowhere.env') });
      expect(missing.code).toBe(2);
      expect(missing.stderr).toMatch(/BATON_ENV_FILE names .*nowhere\.env, which does not exist/);
    } finally {
      fs.rmSync(folder, { recursive: true, force: true });
    }
  });
});

describe('health', () => {
  it('exits 0 when the API answers and accepts the token, 1 with the reason when not', async () => {
    const agent = await newAgent('healthy');
    expect((await cliAs(agent.token, stack)('health')).code).toBe(0);
    const forged = await cliAs(`${agent.token.slice(0, -4)}AAAA`, stack)('health');
    expect(forged.code).toBe(1);
    expect(forged.stderr).toMatch(/answered 401|API key|token/);
    // A revoked token: the database's reason and what to do, as every other command says it.
    await admin.revokeAgent(agent.id);
    const revoked = await cliAs(agent.token, stack)('health');
    expect(revoked.code).toBe(1);
    expect(revoked.stderr).toMatch(/was revoked at .* — Ask an operator for a new token: baton agent token/);
    const nobody = await baton(['health', '--url', 'http://127.0.0.1:9'], { ...agentKeyEnv(stack) });
    expect(nobody.code).toBe(1);
    expect(nobody.stderr).toMatch(/does not answer/);
  });
});

describe('help', () => {
  const commands = [
    'discover', 'status', 'handoff', 'broadcast', 'tasks', 'show', 'claim', 'start', 'progress', 'ask', 'answer',
    'reject', 'complete', 'fail', 'cancel', 'release', 'reassign', 'message', 'inbox',
    'artifacts', 'artifact get', 'chain', 'sweep', 'agent run', 'agent tick', 'agent create', 'agent token', 'agent revoke', 'agent list', 'agent show',
    'stack start', 'stack stop', 'stack status', 'stack env', 'stack serve', 'keys generate', 'keys public', 'watch', 'health', 'mcp',
    'retry', 'dead-letters', 'schedule add', 'schedule list', 'schedule remove',
  ];
  // Forty-five CLI processes: four at a time, so that they do not starve the test files running beside
  // them (all at once, a loaded 2-core run took over 30 s), with time for a slow machine.
  it('shows a real example for every command', async () => {
    const results: CliResult[] = [];
    for (let i = 0; i < commands.length; i += 4) {
      results.push(...await Promise.all(commands.slice(i, i + 4).map((c) => baton([...c.split(' '), '--help']))));
    }
    results.forEach((result, i) => {
      expect(result.code, commands[i]).toBe(0);
      expect(result.stdout, commands[i]).toMatch(new RegExp(`Example[^:]*:\\n\\s+(\\$ |.*\\s)baton ${commands[i]!.split(' ')[0]}`));
    });
  }, 120_000);
});
