/** What the CLI says when it cannot do what was asked: usage errors, pipes that close, wrong URLs and keys. */
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { baton, cliPath } from './cli.js';
import { newAgent, stack } from './helpers.js';
import { agentKeyEnv } from './keys-mode.js';

describe('CLI errors', () => {
  it('are one JSON document on stderr under --json, usage errors included', async () => {
    const unknown = await baton(['--json', 'claim', '--bogus']);
    expect(unknown.code).toBe(2);
    expect(unknown.stdout).toBe('');
    expect(JSON.parse(unknown.stderr)).toEqual({ error: { code: 'USAGE', message: "unknown option '--bogus'", hint: 'see --help' } });
    const missing = await baton(['handoff', '--json']);
    expect(JSON.parse(missing.stderr).error).toMatchObject({ message: 'name the agent and the title', hint: expect.stringContaining('baton handoff coder') });
    const missingArg = await baton(['reject', '--json']);
    expect(JSON.parse(missingArg.stderr).error.message).toMatch(/missing required argument/);
  });

  it('refuse a Node older than package.json asks for, saying what to install, before anything runs', async () => {
    // Node 18 played by this Node: its version is what the CLI reads.
    const asNode18 = { NODE_OPTIONS: `--import=data:text/javascript,${encodeURIComponent('Object.defineProperty(process, "versions", { value: { ...process.versions, node: "18.19.0" } })')}` };
    const old = await baton(['--json', 'tasks'], asNode18);
    expect(old.code).toBe(2);
    expect(old.stdout).toBe('');
    const { engines } = JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { engines: { node: string } };
    expect(JSON.parse(old.stderr).error).toMatchObject({
      code: 'NODE_VERSION',
      message: `Baton needs Node ${engines.node.replace('>=', '')} or later, and this is Node 18.19.0: install a current Node (nodejs.org, or your system's packages) and run it again`,
    });
    const { version } = JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
    // Answered before the command tree loads, and the same as commander's own answer beside other words.
    // The version first (what scripts compare), then the newest migration the package brings.
    const level = fs.readdirSync(new URL('../supabase/migrations/', import.meta.url)).sort().at(-1)!.split('_')[0];
    for (const words of [['--version'], ['-V'], ['--version', '--json']]) expect((await baton(words)).stdout).toBe(`${version} (migrations to ${level})\n`);
  });

  it('leave quietly when the reader closes the pipe early', async () => {
    const { stderr } = await new Promise<{ stderr: string }>((resolve) => {
      execFile('/bin/sh', ['-c', `"${process.execPath}" "${cliPath}" --help | head -1`], (_e, _out, err) => resolve({ stderr: err }));
    });
    expect(stderr).toBe('');
  });

  it('name the URL and the setting to fix when the API cannot be reached', async () => {
    const agent = await newAgent('lost');
    const { code, stderr } = await baton(['tasks'], { SUPABASE_URL: 'http://127.0.0.1:9', SUPABASE_ANON_KEY: stack.SUPABASE_ANON_KEY, BATON_AGENT_TOKEN: agent.token });
    expect(code, 'nothing was decided: 75, try again').toBe(75);
    // Why, in the words of the failure itself, not fetch's "fetch failed".
    expect(stderr).toMatch(/^error: could not reach http:\/\/127\.0\.0\.1:9: connect ECONNREFUSED 127\.0\.0\.1:9 \(ECONNREFUSED\) — Check SUPABASE_URL/);
    const wrongPath = await baton(['tasks'], { SUPABASE_URL: `${stack.SUPABASE_URL}/rest/v1`, SUPABASE_ANON_KEY: stack.SUPABASE_ANON_KEY, BATON_AGENT_TOKEN: agent.token });
    expect(wrongPath.stderr).toMatch(/answered HTTP 404.* — Set SUPABASE_URL to the project URL itself/);
  });

  it('reach a project over TLS, and say why when its certificate is not trusted', async () => {
    // TLS in front of the stack, as a hosted project (or a company's proxy) has it, with a certificate
    // of its own that Node does not trust unless told to (NODE_EXTRA_CA_CERTS).
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-tls-'));
    const [key, cert] = [path.join(dir, 'key.pem'), path.join(dir, 'cert.pem')];
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
    const proxy = https.createServer({ key: fs.readFileSync(key), cert: fs.readFileSync(cert) }, (req, res) => {
      const forward = http.request(`${stack.SUPABASE_URL}${req.url}`, { method: req.method, headers: { ...req.headers, host: new URL(stack.SUPABASE_URL).host } }, (answer) => {
        res.writeHead(answer.statusCode!, answer.headers);
        answer.pipe(res);
      });
      req.pipe(forward);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      const url = `https://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
      const agent = await newAgent('tls');
      const env = { SUPABASE_URL: url, ...agentKeyEnv(stack), BATON_AGENT_TOKEN: agent.token };
      const untrusted = await baton(['tasks'], env);
      expect(untrusted.code).toBe(75);
      expect(untrusted.stderr).toMatch(new RegExp(`^error: could not reach ${url}: self-signed certificate[^—]*\\(DEPTH_ZERO_SELF_SIGNED_CERT\\) — Check SUPABASE_URL`));
      const trusted = await baton(['handoff', agent.id, 'over TLS', '--allow-offline', '--json'], { ...env, NODE_EXTRA_CA_CERTS: cert });
      expect(trusted.code, trusted.stderr).toBe(0);
      const sent = JSON.parse(trusted.stdout) as { id: string };
      expect(JSON.parse((await baton(['show', sent.id, '--json'], { ...env, NODE_EXTRA_CA_CERTS: cert })).stdout)).toMatchObject({ task: { id: sent.id, title: 'over TLS' } });
    } finally {
      proxy.closeAllConnections();
      await new Promise((resolve) => proxy.close(resolve));
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('blame a wrong API key on the key, not the URL', async () => {
    const agent = await newAgent('keyless');
    const { code, stderr } = await baton(['tasks', '--json'], { SUPABASE_URL: stack.SUPABASE_URL, SUPABASE_ANON_KEY: 'not-a-key', BATON_AGENT_TOKEN: agent.token });
    expect(code).toBe(1);
    expect(JSON.parse(stderr).error).toMatchObject({ code: 'API_KEY', message: expect.stringContaining('refused the API key'), hint: expect.stringContaining('SUPABASE_ANON_KEY') });
  });
});
