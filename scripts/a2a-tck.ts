/**
 * Runs the A2A project's conformance kit (a2aproject/a2a-tck, branch 1.0-dev, a local checkout: it
 * needs its Python packages, and cannot run in CI) against `baton a2a` on a stack of its own, at the
 * root and at /agents/<id>/, over JSON-RPC and HTTP+JSON, and prints its counts per binding.
 *
 *   A2A_TCK_DIR=/path/to/a2a-tck npm run tck:a2a
 *   A2A_TCK_DIR=… TCK_LEVEL=should PYTHON=/usr/bin/python3 PYTHONPATH=/path/to/google-api-protos npm run tck:a2a
 *
 * The kit's executor scenarios (scenarios/*.feature: what the agent does for a message whose id starts
 * with "tck-…") are played by a Baton daemon, which reads the message id from the task's idempotency
 * key (a2a:<messageId>). The kit sends no credentials, so a small proxy in front of the server adds a
 * Baton agent token to every request, as an authenticated caller would; the cards name the proxy.
 * Reports land in the kit's reports/ folder, one JUnit file per run.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { createAdminClient, createAgent, parseSigningKey, type Handler } from '../src/index.js';
import { startA2AServer } from '../src/a2a/server.js';
import { silentLogger } from '../src/logger.js';
import { freePort } from '../src/stack/ports.js';
import { startStackProcess } from './stack-process.js';

const kit = process.env.A2A_TCK_DIR;
if (!kit || !fs.existsSync(path.join(kit, 'tests', 'compatibility'))) {
  process.stderr.write('Set A2A_TCK_DIR to a checkout of a2aproject/a2a-tck (branch 1.0-dev).\n');
  process.exit(2);
}
const python = process.env.PYTHON ?? '/usr/bin/python3';
const level = process.env.TCK_LEVEL ?? 'must';
const say = (text: string) => process.stdout.write(`${text}\n`);

/**
 * The kit's scenarios, by the prefix of the message id that asks for them. A text artifact is what a
 * Baton agent returns as its summary (the result artifact's text part); a file is an artifact.
 */
const scenarios: Array<[string, Handler]> = [
  ['tck-artifact-file-url', async (_t, ctx) => { await ctx.artifact('output.txt', { uri: 'https://example.com/output.txt', mediaType: 'text/plain' }); }],
  ['tck-artifact-file', async (_t, ctx) => { await ctx.artifact('output.txt', 'Generated file content', { mediaType: 'text/plain' }); }],
  ['tck-artifact-text', () => ({ status: 'success', summary: 'Generated text content' })],
  ['tck-artifact-data', async (_t, ctx) => { await ctx.artifact('data.json', { json: { key: 'value', count: 42 } }); }],
  ['tck-input-required', async (_t, ctx) => ctx.ask('The kit asks for input.')],
  ['tck-reject-task', () => ({ status: 'failure', summary: 'rejected' })],
  ['tck-stream-artifact-chunked', async (_t, ctx) => { await ctx.progress('working'); await ctx.artifact('chunks', 'chunk-1 chunk-2', { mediaType: 'text/plain' }); }],
  ['tck-stream-artifact-file', async (_t, ctx) => { await ctx.progress('working'); await ctx.artifact('output.txt', 'Streamed file content', { mediaType: 'text/plain' }); }],
  ['tck-stream-artifact-text', async (_t, ctx) => { await ctx.progress('working'); return { status: 'success', summary: 'Streamed text content' }; }],
  ['tck-stream-ordering-001', async (_t, ctx) => { await ctx.progress('working'); return { status: 'success', summary: 'Ordered output' }; }],
  ['tck-stream-001', async (_t, ctx) => { await ctx.progress('working'); return { status: 'success', summary: 'Stream hello from TCK' }; }],
  ['tck-stream-003', async (_t, ctx) => { await ctx.progress('working'); return { status: 'success', summary: 'Stream task lifecycle' }; }],
  ['test-resubscribe-message-id', async (_t, ctx) => { await ctx.progress('working'); await new Promise((r) => setTimeout(r, 20_000)); }],
];
const played: Handler = (task, ctx) => {
  const messageId = (task.idempotency_key ?? '').replace(/^a2a:/, '');
  const scenario = scenarios.find(([prefix]) => messageId.startsWith(prefix));
  return scenario ? scenario[1](task, ctx) : { status: 'success', summary: 'Hello from TCK' };
};

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-tck-'));
fs.chmodSync(dir, 0o755);
const stack = await startStackProcess(dir);
const closing: Array<() => Promise<unknown>> = [];
try {
  const { env } = stack;
  const admin = createAdminClient({ url: env.SUPABASE_URL, secretKey: env.SUPABASE_SECRET_KEY, signingKey: parseSigningKey(env.BATON_SIGNING_KEY, 'BATON_SIGNING_KEY') });
  const stamp = Date.now().toString(36);
  const agent = await admin.createAgent({ id: `tck-agent-${stamp}`, capabilities: ['tck'], maxConcurrent: 50 });
  const caller = await admin.createAgent({ id: `tck-caller-${stamp}` });
  const daemon = createAgent({ url: env.SUPABASE_URL, publishableKey: env.SUPABASE_PUBLISHABLE_KEY, token: agent.token, capabilities: ['tck'], maxConcurrent: 50, poll: '* * * * * *', executors: { '*': played }, log: silentLogger });
  await daemon.start();
  closing.push(() => daemon.stop());

  // The proxy the kit talks to: each request goes on to the server with the caller's token.
  let upstream = '';
  const proxy = http.createServer((req, res) => {
    const forward = http.request(`${upstream}${req.url}`, { method: req.method, headers: { ...req.headers, host: new URL(upstream).host, authorization: `Bearer ${caller.token}` } }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    forward.on('error', (err) => { res.writeHead(502); res.end(String(err)); });
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  closing.push(() => new Promise((resolve) => { proxy.closeAllConnections(); proxy.close(resolve); }));
  const front = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  // The server listens on a port of its own; its cards give the proxy's address.
  const port = await freePort();
  const server = await startA2AServer({ url: env.SUPABASE_URL, publishableKey: env.SUPABASE_PUBLISHABLE_KEY, directory: admin.db, defaultAgent: agent.agent.id, port, publicUrl: front, log: silentLogger });
  closing.push(() => server.close());
  upstream = `http://127.0.0.1:${port}`;
  // The kit's pytest settings without its minversion (8.0): Debian's pytest 7 runs it as well.
  const ini = path.join(dir, 'tck-pytest.ini');
  fs.writeFileSync(ini, ['[pytest]', 'asyncio_mode = auto', 'markers =',
    ...['core', 'must', 'should', 'may', 'grpc', 'jsonrpc', 'http_json', 'streaming', 'integration'].map((m) => `    ${m}: the kit's marker`), ''].join('\n'));
  const rows: string[] = [];
  for (const [where, host] of [['/', front], [`/agents/<id>/`, `${front}/agents/${agent.agent.id}`]] as const) {
    for (const transport of ['jsonrpc', 'http_json']) {
      const report = path.join(kit, 'reports', `baton-${transport}-${where === '/' ? 'root' : 'agent'}-${level}.xml`);
      fs.mkdirSync(path.dirname(report), { recursive: true });
      const code = await new Promise<number>((resolve) => {
        const run = spawn(python, ['-m', 'pytest', 'tests/compatibility/', `--sut-host=${host}`, `--transport=${transport}`, '-m', level, '-q', '--tb=line', '-p', 'no:cacheprovider', '-c', ini, `--rootdir=${kit}`, `--junitxml=${report}`], { cwd: kit, stdio: ['ignore', 'inherit', 'inherit'] });
        run.on('close', (c) => resolve(c ?? 1));
      });
      const xml = fs.existsSync(report) ? fs.readFileSync(report, 'utf8') : '';
      const count = (name: string) => Number(new RegExp(`<testsuite[^>]* ${name}="(\\d+)"`).exec(xml)?.[1] ?? NaN);
      const [tests, failures, errors, skipped] = ['tests', 'failures', 'errors', 'skipped'].map(count) as [number, number, number, number];
      rows.push(`| ${where} | ${transport} | ${tests - failures - errors - skipped} | ${failures + errors} | ${skipped} | ${code} |`);
    }
  }
  say(`\nThe A2A conformance kit (${level.toUpperCase()} level) against baton a2a\n`);
  say('| endpoint | binding | passed | failed | skipped | pytest exit |');
  say('| --- | --- | --- | --- | --- | --- |');
  for (const row of rows) say(row);
} finally {
  for (const close of closing.reverse()) await close().catch(() => undefined);
  await stack.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}
