/** `baton doctor`: each finding with what to do, against the suite's stack and folders of its own. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { version } from '../src/package.js';
import { packageRoot } from '../src/stack/paths.js';
import { baton } from './cli.js';
import { admin, newAgent, stack } from './helpers.js';
import { agentKeyEnv, operatorEnv } from './keys-mode.js';

interface Finding { check: string; verdict: 'ok' | 'warn' | 'fail'; said: string; fix?: string }

const folders: string[] = [];
const folder = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-doctor-'));
  folders.push(dir);
  return dir;
};
afterAll(() => { for (const dir of folders) fs.rmSync(dir, { recursive: true, force: true }); });

/** Nothing from the test's own environment: the folder's .env and what the test gives decide. */
const blank = { SUPABASE_PUBLISHABLE_KEY: '', SUPABASE_ANON_KEY: '', SUPABASE_SECRET_KEY: '', SUPABASE_SERVICE_ROLE_KEY: '', BATON_SIGNING_KEY: '', SUPABASE_JWT_SECRET: '', BATON_STACK_DIR: '', BATON_ENV_FILE: '' };

async function doctor(cwd: string, env: Record<string, string> = {}): Promise<{ code: number; findings: Finding[] }> {
  const { code, stdout } = await baton(['doctor', '--json'], { ...blank, ...env }, cwd);
  return { code, findings: JSON.parse(stdout) as Finding[] };
}

const find = (findings: Finding[], check: string) => findings.find((f) => f.check === check);

describe('baton doctor', () => {
  it('says to start a stack where there is neither a stack nor a project, and exits 1', async () => {
    const dir = folder();
    const { code, findings } = await doctor(dir);
    expect(code).toBe(1);
    expect(find(findings, 'node')?.verdict).not.toBe('fail');
    expect(find(findings, 'stack')).toMatchObject({ verdict: 'fail', said: expect.stringContaining('no stack runs in'), fix: expect.stringContaining('baton stack start --dir') });
    expect(find(findings, 'api'), 'nothing to ask once there is no project').toBeUndefined();
  });

  it('passes a project that works, warning of a settings file others may read and of a missing agent token', async () => {
    const dir = folder();
    const lines = Object.entries({ SUPABASE_URL: stack.SUPABASE_URL, ...agentKeyEnv(stack), ...operatorEnv(stack) }).filter(([, v]) => v).map(([k, v]) => `${k}=${v}`);
    fs.writeFileSync(path.join(dir, '.env'), `${lines.join('\n')}\n`, { mode: 0o644 });
    fs.chmodSync(path.join(dir, '.env'), 0o644);
    const { code, findings } = await doctor(dir);
    expect(code, JSON.stringify(findings)).toBe(0);
    expect(find(findings, 'settings')).toMatchObject({ verdict: 'warn', said: expect.stringContaining('others may read it (mode 644)'), fix: `chmod 600 ${path.join(dir, '.env')}` });
    expect(find(findings, 'api')).toMatchObject({ verdict: 'ok', said: `${stack.SUPABASE_URL} answers and takes the API key` });
    expect(find(findings, 'clock')?.verdict).toBe('ok');
    expect(find(findings, 'agent')).toMatchObject({ verdict: 'warn', said: expect.stringContaining('BATON_AGENT_TOKEN is not set') });
    expect(find(findings, 'operator')).toMatchObject({ verdict: 'ok', said: expect.stringMatching(/^the secret key works: \d+ agent\(s\) registered$/) });
    // This Baton's version and migrations, and the database's level: the same.
    const level = fs.readdirSync(path.join(packageRoot, 'supabase', 'migrations')).sort().at(-1)!.split('_')[0];
    expect(find(findings, 'schema')).toMatchObject({ verdict: 'ok', said: `baton ${version} brings migrations to ${level}; the database is at ${level}, the same` });

    fs.chmodSync(path.join(dir, '.env'), 0o600);
    expect(find((await doctor(dir)).findings, 'settings')).toMatchObject({ verdict: 'ok', said: `${path.join(dir, '.env')} (readable by its owner only)` });
  });

  it('names the agent a token is for, warns before it expires, and fails a revoked one with the reason', async () => {
    const dir = folder();
    const env = { SUPABASE_URL: stack.SUPABASE_URL, ...agentKeyEnv(stack) } as Record<string, string>;
    const agent = await newAgent('checked');
    const asAgent = (await doctor(dir, { ...env, BATON_AGENT_TOKEN: agent.token })).findings;
    expect(find(asAgent, 'agent')).toMatchObject({ verdict: 'ok', said: `agent "${agent.id}", accepted; it does not expire` });
    // An agent reads the database's level too.
    expect(find(asAgent, 'schema')).toMatchObject({ verdict: 'ok', said: expect.stringMatching(/; the database is at \d{14}, the same$/) });

    const soon = await admin.issueToken(agent.id, new Date(Date.now() + 30 * 3_600_000));
    expect(find((await doctor(dir, { ...env, BATON_AGENT_TOKEN: soon })).findings, 'agent'))
      .toMatchObject({ verdict: 'warn', said: expect.stringMatching(/accepted; it expires .* \(in 30 hours\)$/), fix: expect.stringContaining(`baton agent token ${agent.id}`) });

    await admin.revokeAgent(agent.id);
    const revoked = await doctor(dir, { ...env, BATON_AGENT_TOKEN: agent.token });
    expect(revoked.code).toBe(1);
    expect(find(revoked.findings, 'agent')).toMatchObject({ verdict: 'fail', said: expect.stringMatching(/revoked/) });

    const garbled = await doctor(dir, { ...env, BATON_AGENT_TOKEN: 'not-a-token' });
    expect(find(garbled.findings, 'agent')).toMatchObject({ verdict: 'fail', said: 'BATON_AGENT_TOKEN is not a JWT' });
  });
});
