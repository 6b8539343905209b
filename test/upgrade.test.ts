/**
 * An upgrade as docs/upgrading.md says, from the previous release to the working tree: the release is
 * built from git into a cache by scripts/release-runtime.mjs (its own node_modules, its own dist), its stack is loaded with work in
 * every state while its daemon works, the stack is stopped and started again by today's code on the
 * same folder, and the daemon of the previous release goes on through it. Nothing is lost, nothing runs
 * twice, and a question asked before the upgrade is answered into the run that asked it.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdminClient } from '../src/client/admin.js';
import { createBatonClient } from '../src/client/agent.js';
import { createAgent, type BatonAgent } from '../src/agent/daemon.js';
import { silentLogger } from '../src/logger.js';
import type { parseSigningKey } from '../src/tokens.js';
import { startStack, type Stack } from '../src/stack/index.js';
import { freePort } from '../src/stack/ports.js';
import { baton } from './cli.js';
import { eventually, fast } from './daemon-helpers.js';
import { makeStackDir, removeStackFolder } from './global-setup.js';
// @ts-expect-error: a plain ES module of the scripts folder, without types
import { ensureRelease, previousRelease } from '../scripts/release-runtime.mjs';

interface Release {
  startStack: typeof startStack;
  createAdminClient: typeof createAdminClient;
  parseSigningKey: typeof parseSigningKey;
  createBatonClient: (o: Record<string, unknown>) => { handoff(i: Record<string, unknown>): Promise<{ id: string }>; cancel(id: string, why: string): Promise<unknown> };
  createAgent: (o: Record<string, unknown>) => { start(): Promise<void>; stop(o?: { graceSeconds?: number }): Promise<void> };
}

let release: Release;
let dir: string;
let ports: { apiPort: number; dbPort: number };
let stack: Stack | undefined;
/** The previous release's stack, until the test stops it for the upgrade: stopped after the test if not. */
let oldStack: { stop(): Promise<void> } | undefined;
const daemons: Array<{ stop(o?: { graceSeconds?: number }): Promise<void> }> = [];

beforeAll(async () => {
  const built = ensureRelease() as string;
  release = await import(path.join(built, 'dist', 'index.js')) as Release;
  dir = makeStackDir('baton-upgrade-');
  const apiPort = await freePort();
  ports = { apiPort, dbPort: await freePort([apiPort]) };
}, 900_000);

afterAll(async () => {
  await Promise.all(daemons.map((d) => d.stop({ graceSeconds: 0 }).catch(() => undefined)));
  try {
    await oldStack?.stop();
    await stack?.stop();
  } finally {
    if (dir) removeStackFolder(dir);
  }
});

describe(`an upgrade from ${previousRelease} to the working tree`, () => {
  it('keeps every task, token and schedule, runs nothing twice, and answers a question asked before it into its run', async () => {
    // The previous release's stack, with its agents, work in every state and its daemon at work.
    const old = await release.startStack({ dir, ...ports });
    oldStack = old;
    const env = old.env;
    const key = { publishableKey: env.SUPABASE_PUBLISHABLE_KEY };
    const admin = release.createAdminClient({ url: env.SUPABASE_URL, secretKey: env.SUPABASE_SECRET_KEY, signingKey: release.parseSigningKey(env.BATON_SIGNING_KEY, 'BATON_SIGNING_KEY') });
    const agents: Record<string, string> = Object.fromEntries(await Promise.all(['sender', 'worker', 'away', 'later'].map(async (name) =>
      [name, (await admin.createAgent({ id: `upgrade-${name}` })).token] as const)));
    const sender = release.createBatonClient({ url: env.SUPABASE_URL, ...key, token: agents.sender });
    await admin.createSchedule({ name: 'upgrade-nightly', schedule: '0 6 * * *', from: 'upgrade-sender', to: 'upgrade-worker', template: { title: 'Nightly' } });

    const runs = new Map<string, number>();
    const answers = new Map<string, string>();
    let releaseSlow!: () => void;
    const slowDone = new Promise<void>((resolve) => { releaseSlow = resolve; });
    const worker = release.createAgent({
      // Its default schedules, as users run it: woken by push, its poll a slow safety net.
      url: env.SUPABASE_URL, ...key, token: agents.worker, log: silentLogger, capabilities: ['upgrade-paint'],
      executors: {
        '*': async (task: { id: string; title: string }, ctx: { ask(q: string): Promise<string>; attempt: number }) => {
          runs.set(task.id, (runs.get(task.id) ?? 0) + 1);
          if (task.title === 'fails') throw new Error('cannot');
          if (task.title === 'asks') {
            const answer = await ctx.ask('Which colour?');
            answers.set(task.id, answer);
            return { status: 'success', summary: `painted ${answer} in attempt ${ctx.attempt}` };
          }
          if (task.title === 'slow') await slowDone;
          return { status: 'success', summary: `did ${task.title}` };
        },
      },
    });
    daemons.push(worker);
    await worker.start();

    const made = {
      done: await sender.handoff({ to: 'upgrade-worker', title: 'done' }),
      fails: await sender.handoff({ to: 'upgrade-worker', title: 'fails', maxAttempts: 1 }),
      asks: await sender.handoff({ to: 'upgrade-worker', title: 'asks' }),
      slow: await sender.handoff({ to: 'upgrade-worker', title: 'slow' }),
      waiting: await sender.handoff({ to: 'upgrade-away', title: 'waiting', allowOffline: true }),
      withdrawn: await sender.handoff({ to: 'upgrade-away', title: 'withdrawn', allowOffline: true }),
    };
    await sender.cancel(made.withdrawn.id, 'not needed');
    const readAs = (token: string | undefined) => createBatonClient({ url: env.SUPABASE_URL, ...key, token: token! });
    const status = async (id: string) => {
      const { data } = await admin.db.from('task_handoffs').select('status').eq('id', id).single();
      return (data as { status: string } | null)?.status;
    };
    await eventually(async () => (await status(made.done.id)) === 'completed' && (await status(made.fails.id)) === 'failed'
      && (await status(made.asks.id)) === 'input_required' && (await status(made.slow.id)) === 'in_progress', 60_000, 'work in every state');
    const before = Object.fromEntries(await Promise.all(Object.entries(made).map(async ([name, t]) => [name, await status(t.id)] as const)));

    // Today's doctor names the previous release's database as older, and says what to do.
    const schemaSaid = async (url: string, secretKey: string) => {
      const { stdout } = await baton(['doctor', '--json'], { SUPABASE_URL: url, SUPABASE_SECRET_KEY: secretKey, SUPABASE_PUBLISHABLE_KEY: env.SUPABASE_PUBLISHABLE_KEY, BATON_AGENT_TOKEN: '', BATON_STACK_DIR: '', BATON_ENV_FILE: '' });
      return (JSON.parse(stdout) as Array<{ check: string; verdict: string; said: string; fix?: string }>).find((f) => f.check === 'schema');
    };
    expect(await schemaSaid(env.SUPABASE_URL, env.SUPABASE_SECRET_KEY)).toMatchObject({ verdict: 'warn', said: expect.stringContaining('the database is older than 0.2.0'), fix: expect.stringContaining('docs/upgrading.md') });

    // The upgrade, as docs/upgrading.md says: stop the stack, start it with the new code on the same folder.
    await old.stop();
    oldStack = undefined;
    stack = await startStack({ dir, ...ports });
    const upgraded = createAdminClient({ url: stack.env.SUPABASE_URL, secretKey: stack.env.SUPABASE_SECRET_KEY });
    expect(await schemaSaid(stack.env.SUPABASE_URL, stack.env.SUPABASE_SECRET_KEY)).toMatchObject({ verdict: 'ok', said: expect.stringMatching(/the database is at \d{14}, the same$/) });

    // Every task as it was; tokens and the schedule kept; the new tables there.
    const senderNow = readAs(agents.sender);
    for (const [name, t] of Object.entries(made)) expect([name, (await senderNow.getTask(t.id)).status]).toEqual([name, before[name]]);
    expect((await upgraded.listSchedules()).find((s) => s.name === 'upgrade-nightly')).toMatchObject({ enabled: true });
    expect(await senderNow.budget(made.done.id)).toBeNull();

    // The question asked before the upgrade is answered into the run that asked it; the slow run ends.
    await senderNow.answer(made.asks.id, 'blue');
    releaseSlow();
    const finished = async (id: string) => eventually(async () => { const t = await senderNow.getTask(id); return t.status === 'completed' && t; }, 60_000, `task ${id} to complete`);
    expect((await finished(made.asks.id)).result?.summary).toBe('painted blue in attempt 1');
    expect((await finished(made.slow.id)).attempts).toBe(1);
    expect(answers.get(made.asks.id)).toBe('blue');

    // Today's daemon, for the agent that was away, takes what waited; the old daemon works on beside it.
    const away = createAgent({ url: stack.env.SUPABASE_URL, publishableKey: stack.env.SUPABASE_PUBLISHABLE_KEY, token: agents.away!, ...fast, log: silentLogger,
      executors: { '*': async (task) => { runs.set(task.id, (runs.get(task.id) ?? 0) + 1); return { status: 'success', summary: `did ${task.title} after the upgrade` }; } } }) as BatonAgent;
    daemons.push(away);
    await away.start();
    expect((await finished(made.waiting.id)).result?.summary).toBe('did waiting after the upgrade');
    const afterwards = await senderNow.handoff({ to: 'upgrade-worker', title: 'after', budget: { tokens: 1000 } });
    expect((await finished(afterwards.id)).result?.summary).toBe('did after');
    // A broadcast only the old daemon's agent can take (issue 74 saw none taken by it).
    const broadcast = await senderNow.handoff({ requiredCapabilities: ['upgrade-paint'], title: 'broadcast after' });
    expect(await finished(broadcast.id)).toMatchObject({ claimed_by: 'upgrade-worker', result: { summary: 'did broadcast after' } });

    // A daemon of the previous release started only now, the only process of its agent, on its
    // default schedules (woken by push, not by a fast poll): it claims, runs and reports its work.
    const later = release.createAgent({
      url: env.SUPABASE_URL, ...key, token: agents.later, log: silentLogger,
      executors: { '*': async (task: { id: string; title: string }) => { runs.set(task.id, (runs.get(task.id) ?? 0) + 1); return { status: 'success', summary: `did ${task.title} on the old daemon` }; } },
    });
    daemons.push(later);
    await later.start();
    const forLater = await senderNow.handoff({ to: 'upgrade-later', title: 'for the old daemon' });
    expect((await finished(forLater.id)).result?.summary).toBe('did for the old daemon on the old daemon');

    // The old worker's agent upgraded as docs/upgrading.md says, with the old daemon still at work
    // (a supervisor that starts the new one first): today's daemon takes the agent's work from then on.
    const upgradedWorker = createAgent({ url: stack.env.SUPABASE_URL, publishableKey: stack.env.SUPABASE_PUBLISHABLE_KEY, token: agents.worker!, ...fast, log: silentLogger,
      executors: { '*': async (task) => { runs.set(task.id, (runs.get(task.id) ?? 0) + 1); return { status: 'success', summary: `did ${task.title} on today's daemon` }; } } }) as BatonAgent;
    daemons.push(upgradedWorker);
    await upgradedWorker.start();
    const overlapped = await senderNow.handoff({ to: 'upgrade-worker', title: 'overlapped' });
    expect((await finished(overlapped.id)).result?.summary).toBe('did overlapped on today\'s daemon');

    // Nothing ran twice; the cancelled and the failed stayed so.
    for (const t of [made.done, made.fails, made.asks, made.slow, made.waiting, afterwards, broadcast, forLater, overlapped]) expect([t.id, runs.get(t.id)]).toEqual([t.id, 1]);
    expect(runs.has(made.withdrawn.id)).toBe(false);
    expect((await senderNow.getTask(made.withdrawn.id)).status).toBe('cancelled');
    expect((await senderNow.getTask(made.fails.id)).status).toBe('failed');
  }, 600_000);
});
