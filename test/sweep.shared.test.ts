/**
 * The fleet shares one sweep: idle daemons that listen by push cost at most a request a second for
 * twenty of them, sweeping about once per interval between them, and where pg_cron runs the sweep they
 * leave it to pg_cron. Requests are counted as they leave this process (every daemon here is in it). A
 * stack of its own: the request counts must be this file's alone.
 */
import diagnostics from 'node:diagnostics_channel';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createAgent, type BatonAgent } from '../src/agent/daemon.js';
import { eventually } from './daemon-helpers.js';
import { agentKey } from './keys-mode.js';
import { ownStack } from './own-stack.js';

const own = ownStack('idle');

/** Paths of the HTTP requests made by this process while `counting` is on. */
const sent: string[] = [];
let counting = false;
diagnostics.subscribe('undici:request:create', (message) => {
  if (counting) sent.push((message as { request: { path: string } }).request.path.split('?')[0]!);
});

async function startDaemons(prefix: string, n: number, options: { poll?: string } = {}): Promise<BatonAgent[]> {
  const capability = `${prefix}-${Date.now()}`;
  const daemons: BatonAgent[] = [];
  for (let i = 0; i < n; i += 1) {
    const agent = await own.newAgent(`${prefix}-${i}`, { capabilities: [capability] });
    daemons.push(createAgent({ url: own.env.SUPABASE_URL, ...agentKey(own.env), token: agent.token, executors: { '*': () => undefined }, ...options }));
  }
  await Promise.all(daemons.map((d) => d.start()));
  return daemons;
}

const pushUp = (daemons: BatonAgent[]) => daemons.every((d) => (d as unknown as { push?: { up: boolean } }).push?.up);

describe('idle daemons', () => {
  it('make at most one request a second for twenty, and still sweep between them', async () => {
    const daemons = await startDaemons('idle', 20);
    try {
      await eventually(async () => pushUp(daemons), 30_000, 'push to be up on every daemon');
      await sleep(5_000); // first beats, discoveries and sweeps settle
      // A whole safety-net period (60 s, jittered by 10 %): every daemon's claim falls in it once.
      const seconds = 66;
      sent.length = 0;
      counting = true;
      await sleep(seconds * 1000);
      counting = false;
      const sweeps = sent.filter((p) => p.endsWith('/rpc/sweep_tasks')).length;
      const counts = new Map<string, number>();
      for (const p of sent) counts.set(p.replace(/^\/rest\/v1\//, ''), (counts.get(p.replace(/^\/rest\/v1\//, '')) ?? 0) + 1);
      const byPath = [...counts].map(([p, n]) => `${p}: ${n}`);
      expect(sent.length / seconds, `requests in ${seconds} s: ${byPath.join(', ')}`).toBeLessThanOrEqual(1);
      expect(sweeps, `the fleet still sweeps (${byPath.join(', ')})`).toBeGreaterThanOrEqual(2);
    } finally {
      counting = false;
      await Promise.all(daemons.map((d) => d.stop({ graceSeconds: 0 })));
    }
  }, 120_000);

  it('leave the sweep to pg_cron where it runs it', async () => {
    // pg_cron does not exist for the embedded Postgres: its job table stands in, as the sweep reads it.
    const db = new pg.Client({ connectionString: own.env.DATABASE_URL });
    await db.connect();
    await db.query(`create schema cron; create table cron.job (jobid bigserial primary key, jobname text, schedule text, command text, active boolean default true);
      insert into cron.job (jobname, schedule, command) values ('baton-sweep', '* * * * *', 'select public.sweep_tasks()')`);
    sent.length = 0;
    counting = true;
    const daemons = await startDaemons('cronned', 3, { poll: '* * * * * *' });
    const sweeps = () => sent.filter((p) => p.endsWith('/rpc/sweep_tasks')).length;
    try {
      // Each daemon's first turn falls within its period; from its answer it learns that pg_cron sweeps.
      await eventually(async () => sweeps() >= 3, 60_000, 'each daemon to sweep once');
      // Polling every second, three sharing daemons would sweep three or four times more in 20 s.
      await sleep(20_000);
      expect(sweeps()).toBe(3);
    } finally {
      counting = false;
      await Promise.all(daemons.map((d) => d.stop({ graceSeconds: 0 })));
      await db.query('drop schema cron cascade');
      await db.end();
    }
  }, 90_000);
});
