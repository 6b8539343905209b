/**
 * Baton's main job, end to end on the embedded stack: start it, register two agents, hand a task from
 * one to the other, claim it, complete it, and show the result and its history. Leaves nothing running.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createAdminClient, createBatonClient, startStack } from '../src/index.js';
import { freePort } from '../src/stack/ports.js';

const say = (text: string) => process.stdout.write(`${text}\n`);

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-demo-'));
fs.chmodSync(dir, 0o755); // as root, Postgres runs as "postgres" and must enter it

say('Starting the embedded stack (Postgres, migrations via the Supabase CLI, PostgREST, gateway)…');
const started = Date.now();
const apiPort = await freePort();
const stack = await startStack({ dir, apiPort, dbPort: await freePort([apiPort]) });
try {
  const { env } = stack;
  say(`  API ${env.SUPABASE_URL}/rest/v1 ready in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);

  const admin = createAdminClient({ url: env.SUPABASE_URL, serviceRoleKey: env.SUPABASE_SERVICE_ROLE_KEY, jwtSecret: env.SUPABASE_JWT_SECRET });
  const asAgent = (token: string) => createBatonClient({ url: env.SUPABASE_URL, anonKey: env.SUPABASE_ANON_KEY, token });

  const planner = asAgent((await admin.createAgent({ id: 'planner', displayName: 'Planner', capabilities: ['planning'] })).token);
  const coder = asAgent((await admin.createAgent({ id: 'coder', displayName: 'Coder', capabilities: ['typescript'] })).token);
  say('Registered agents planner and coder, each with its own token.');

  const task = await planner.handoff({
    to: 'coder',
    title: 'Write a slugify function',
    priority: 'high',
    payload: { task_type: 'code', spec: 'lower-case, ASCII, words joined by -' },
  });
  say(`planner → coder: task ${task.id.slice(0, 8)} "${task.title}" (${task.priority}, ${task.status})`);

  const [claimed] = await coder.claimNext({ start: true });
  if (!claimed) throw new Error('coder found nothing to claim');
  say(`coder claimed and started it (attempt ${claimed.attempts}, lease until ${claimed.lease_expires_at})`);

  const source = "export const slugify = (s: string) => s.normalize('NFKD').replace(/[^\\w\\s-]/g, '').trim().toLowerCase().replace(/[\\s_-]+/g, '-');";
  await coder.complete(claimed.id, claimed.claim_token!, {
    status: 'success',
    summary: 'slugify written',
    artifacts: [{ name: 'slugify.ts', path: 'src/slugify.ts', preview: source }],
    metrics: { lines: 1 },
  });
  say('coder completed it with a structured result.\n');

  const done = await planner.getTask(task.id);
  say(`planner sees: status ${done.status}, result:`);
  say(JSON.stringify(done.result, null, 2).replace(/^/gm, '  '));
  say('\nHistory (task_events):');
  for (const event of await planner.events(task.id)) {
    say(`  ${event.at.slice(11, 23)}  ${(event.from_status ?? '(new)').padEnd(11)} → ${event.to_status.padEnd(11)} by ${event.actor}`);
  }
} finally {
  await stack.stop();
  fs.rmSync(dir, { recursive: true, force: true });
  say('\nStack stopped and its throwaway folder removed.');
}
