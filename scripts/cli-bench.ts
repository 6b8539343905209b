/**
 * How fast the `baton` command answers, as a cron job, a HEARTBEAT script or a shell pipeline calls it:
 * a fresh process each time. Beside each CLI call, the bare Node process it is measured against:
 *
 * - `baton --version` against `node -e 0` (target: within 1.3×);
 * - `baton show <id>` against a Node script that makes the same five requests with fetch, at once as
 *   `show` does (the task, its events, its messages, its runs' usage, and the heartbeat that goes with
 *   a read) and prints the answer (target: within 1.5×); and against the same script sending with
 *   node:http, as `show` itself does, the least a Node process can spend on those requests;
 * - the same two commands from tsc's unbundled output (dist/cli/bin.js), to show what the bundle saves.
 *
 * Wall time of each process from spawn to exit, the kinds alternating, medians of BENCH_RUNS rounds
 * (default 15) after a warm-up round. Needs `npm run build` first.
 *
 *   npm run bench:cli
 *   BENCH_RUNS=31 npm run bench:cli
 *   BENCH_CLI_ALSO=/var/tmp/old/dist/cli/index.js npm run bench:cli   # another build beside it, as 'other'
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createAdminClient, createBatonClient, parseSigningKey } from '../src/index.js';
import { startStackProcess } from './stack-process.js';
import { median } from './stats.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 15);
const root = fileURLToPath(new URL('..', import.meta.url));
const bundled = path.join(root, 'dist', 'cli', 'index.js');
const unbundled = path.join(root, 'dist', 'cli', 'bin.js');
if (!fs.existsSync(bundled) || !fs.existsSync(unbundled)) throw new Error('no built CLI: run npm run build first');
const say = (text: string) => process.stdout.write(`${text}\n`);

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-cli-bench-'));
fs.chmodSync(dir, 0o755);
const stack = await startStackProcess(dir);
try {
  const { env } = stack;
  const admin = createAdminClient({ url: env.SUPABASE_URL, secretKey: env.SUPABASE_SECRET_KEY, signingKey: parseSigningKey(env.BATON_SIGNING_KEY, 'BATON_SIGNING_KEY') });
  const { token } = await admin.createAgent({ id: 'bench-cli' });
  const task = await createBatonClient({ url: env.SUPABASE_URL, publishableKey: env.SUPABASE_PUBLISHABLE_KEY, token })
    .handoff({ to: 'bench-cli', title: 'read me', allowOffline: true });
  // The bare process: the five requests `baton show` makes, at once as it makes them, each sent by
  // `send(query, method, body)`: with Node's fetch, and with node:http, as a one-shot command sends
  // (src/client/http.ts).
  const bareScript = (send: string) => `
const { SUPABASE_URL: url, SUPABASE_PUBLISHABLE_KEY: apikey, BATON_AGENT_TOKEN: token } = process.env;
const headers = { apikey, authorization: 'Bearer ' + token, 'content-type': 'application/json' };
const id = process.argv[2];
${send}
const [task, events, messages, usage] = await Promise.all([
  send('task_handoffs?select=*&id=eq.' + id),
  send('task_events?select=*&task_id=eq.' + id + '&order=id.asc'),
  send('agent_messages?select=*&task_id=eq.' + id + '&order=created_at.desc&limit=200'),
  send('task_runs?select=*&task_id=eq.' + id + '&order=attempt.asc,model.asc'),
  send('rpc/send_heartbeat', 'POST', JSON.stringify({ p_active: true })),
]);
console.log(JSON.stringify({ task: task[0], events, messages, usage }));
`;
  const bare = path.join(dir, 'bare-fetch.mjs');
  fs.writeFileSync(bare, bareScript(`const send = (query, method = 'GET', body) => fetch(url + '/rest/v1/' + query, { method, headers, body }).then((r) => r.json());`));
  const bareHttp = path.join(dir, 'bare-http.mjs');
  fs.writeFileSync(bareHttp, `import http from 'node:http';\n${bareScript(`const send = (query, method = 'GET', body) => new Promise((resolve, reject) => {
  const request = http.request(url + '/rest/v1/' + query, { method, headers }, (response) => {
    let text = '';
    response.setEncoding('utf8').on('data', (chunk) => { text += chunk; }).on('end', () => resolve(JSON.parse(text)));
  });
  request.on('error', reject).end(body);
});`)}`);
  const childEnv = { ...process.env, SUPABASE_URL: env.SUPABASE_URL, SUPABASE_PUBLISHABLE_KEY: env.SUPABASE_PUBLISHABLE_KEY, BATON_AGENT_TOKEN: token, NO_COLOR: '1' };
  const kinds: Record<string, string[]> = {
    'node -e 0': ['-e', '0'],
    'baton --version': [bundled, '--version'],
    'bare fetch (5 requests)': [bare, task.id],
    'bare node:http (5 requests)': [bareHttp, task.id],
    'baton show <id>': [bundled, 'show', task.id],
    'unbundled baton --version': [unbundled, '--version'],
    'unbundled baton show <id>': [unbundled, 'show', task.id],
    ...(process.env.BENCH_CLI_ALSO ? {
      'other baton --version': [process.env.BENCH_CLI_ALSO, '--version'],
      'other baton show <id>': [process.env.BENCH_CLI_ALSO, 'show', task.id],
    } : {}),
  };
  const times: Record<string, number[]> = Object.fromEntries(Object.keys(kinds).map((k) => [k, []]));
  for (let round = 0; round <= RUNS; round += 1) {
    for (const [kind, args] of Object.entries(kinds)) {
      const started = performance.now();
      execFileSync(process.execPath, args, { env: childEnv, cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
      // Round 0 warms the disk cache and the stack's connections.
      if (round > 0) times[kind]!.push(performance.now() - started);
    }
  }
  const m = Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v)]));
  say(`Node ${process.version}, ${os.cpus().length} cores, medians of ${RUNS} rounds (ms):`);
  say('| what | median ms | against | ratio | target |');
  say('| --- | --- | --- | --- | --- |');
  const row = (kind: string, base: string, target: string) =>
    say(`| ${kind} | ${m[kind]!.toFixed(0)} | ${base} (${m[base]!.toFixed(0)}) | ${(m[kind]! / m[base]!).toFixed(2)} | ${target} |`);
  row('baton --version', 'node -e 0', '≤ 1.3');
  row('baton show <id>', 'bare fetch (5 requests)', '≤ 1.5');
  row('baton show <id>', 'bare node:http (5 requests)', '');
  row('unbundled baton --version', 'node -e 0', '');
  row('unbundled baton show <id>', 'bare fetch (5 requests)', '');
  if (process.env.BENCH_CLI_ALSO) {
    row('other baton --version', 'node -e 0', '');
    row('other baton show <id>', 'bare fetch (5 requests)', '');
  }
} finally {
  await stack.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}
