/**
 * A claim belongs to the process that made it. A daemon killed and started again under the same agent
 * (systemd, Docker's restart policy, a supervisor) gets its dead process's claims back into the queue at
 * once, by the database's rule, and works at full capacity; a process that a later one superseded
 * steps aside. The leases here are an hour long: only the restart can hand the work back in time.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cliAs, cliPath, parsed } from './cli.js';
import { daemon, eventually } from './daemon-helpers.js';
import { newAgent, stack, type TestAgent } from './helpers.js';
import { agentKeyEnv } from './keys-mode.js';

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-restart-'));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) if (child.exitCode === null) { try { process.kill(-child.pid!, 'SIGKILL'); } catch { /* gone */ } }
  // Each executor runs in a process group of its own (the daemon starts it detached), so a killed
  // daemon leaves its `sleep 600` behind: end the groups of those this file started, found by the
  // folder their command names.
  for (const pid of processesNaming(work)) { try { process.kill(-pid, 'SIGKILL'); } catch { /* gone */ } }
  fs.rmSync(work, { recursive: true, force: true });
});

/** The pids whose command line names `text` (none when pgrep finds none: it exits 1). */
function processesNaming(text: string): number[] {
  try {
    return execFileSync('pgrep', ['-f', text]).toString().split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

const hour = 3600;
const fastSchedules = { poll: '* * * * * *', heartbeat: '*/2 * * * * *' };

function configFile(name: string, config: unknown): string {
  const file = path.join(work, `${name}.json`);
  fs.writeFileSync(file, JSON.stringify(config));
  return file;
}

/** `baton agent run` as its own process group, so that a SIGKILL reaches its executors too. */
function runAgent(agent: TestAgent, config: string) {
  let output = '';
  const child = spawn(process.execPath, [cliPath, 'agent', 'run', '--config', config], {
    detached: true,
    env: { ...process.env, SUPABASE_URL: stack.SUPABASE_URL, ...agentKeyEnv(stack), BATON_AGENT_TOKEN: agent.token, LOG_LEVEL: 'info' },
  });
  child.stdout!.on('data', (c: Buffer) => { output += c; });
  child.stderr!.on('data', (c: Buffer) => { output += c; });
  children.push(child);
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, exited, output: () => output };
}

describe('a daemon restarted under the same agent', () => {
  it('hands back the claims of its killed process at once and runs at full capacity', async () => {
    const capability = `restart-${Date.now()}`;
    const boss = await newAgent('boss');
    const phoenix = await newAgent('phoenix', { capabilities: [capability], maxConcurrent: 3 });
    const startedDir = path.join(work, 'started');
    fs.mkdirSync(startedDir);
    const ranLog = path.join(work, 'ran.log');
    const hang = configFile('hang', {
      capabilities: [capability], maxConcurrent: 3, ...fastSchedules,
      executors: { '*': { command: `touch ${startedDir}/$BATON_TASK_ID; sleep 600` } },
    });
    const finish = configFile('finish', {
      capabilities: [capability], maxConcurrent: 3, ...fastSchedules,
      executors: { '*': { command: `cat > /dev/null; echo "$BATON_TASK_ID" >> ${ranLog}; echo '{"status": "success"}'` } },
    });
    const tasks = await Promise.all(Array.from({ length: 6 }, (_, i) =>
      boss.client.broadcast({ title: `restart ${i}`, requiredCapabilities: [capability], leaseSeconds: hour })));

    const first = runAgent(phoenix, hang);
    const held = await eventually(async () => {
      const started = fs.readdirSync(startedDir);
      return started.length === 3 && started;
    }, 30_000, 'the first process to start three tasks');
    process.kill(-first.child.pid!, 'SIGKILL');
    await first.exited;

    // Full capacity at once: the three dead claims no longer count against max_concurrent 3.
    const second = runAgent(phoenix, finish);
    const done = await eventually(async () => {
      const states = await Promise.all(tasks.map((t) => boss.client.getTask(t.id)));
      return states.every((t) => t.status === 'completed') && states;
    }, 60_000, 'every task to complete under the restarted process');
    process.kill(second.child.pid!, 'SIGTERM');
    expect(await second.exited).toBe(0);

    const ran = fs.readFileSync(ranLog, 'utf8').trim().split('\n').sort();
    expect(ran).toEqual(tasks.map((t) => t.id).sort());
    for (const task of done.filter((t) => held.includes(t.id))) {
      expect(task.attempts, 'the killed run counts as an attempt').toBe(2);
      const events = await boss.client.events(task.id);
      const handedBack = events.find((e) => e.note === 'holder restarted; re-queued');
      expect(handedBack, JSON.stringify(events)).toMatchObject({ from_status: 'in_progress', to_status: 'pending', actor: phoenix.id });
    }
    expect(second.output()).toMatch(/handed back the claims an earlier process of this agent left/);
  }, 120_000);

  it('leaves a process that a later one superseded to step aside on its own', async () => {
    const agent = await newAgent('twin');
    // Polling (no push), so that it beats every 2 s; a listening one finds out from its own row.
    const older = await daemon(agent, { executors: {}, push: false });
    let stoppedOnItsOwn = false;
    void older.instance.stopped.then(() => { stoppedOnItsOwn = true; });
    const newer = await daemon(agent, { executors: {} });
    // The older process's next heartbeat names an incarnation that is no longer the agent's.
    await eventually(async () => stoppedOnItsOwn, 30_000, 'the older process to stop on its own');
    expect(older.lines.some((l) => l.msg === 'a later process took over this agent; stopping (run one daemon per agent)')).toBe(true);
    // The newer one still runs as the agent, and the row is still its.
    const me = await agent.client.heartbeat();
    expect(me.is_active).toBe(true);
    expect(newer.lines.some((l) => l.msg === 'agent stopped')).toBe(false);
  });

  it('lets a hand-driven agent say it restarted: baton status --restarted hands back what it held', async () => {
    const boss = await newAgent('boss');
    const bot = await newAgent('rebooted');
    const as = cliAs(bot.token, stack);
    const claimed = await boss.client.handoff({ to: bot.id, title: 'held across a reboot' });
    await bot.client.claim(claimed.id);
    const said = parsed(await as('status', '--restarted', '--json'));
    expect(said.handed_back).toMatchObject({ requeued_unstarted: 1, requeued_expired: 0, dead_lettered: 0 });
    const task = await boss.client.getTask(claimed.id);
    expect(task).toMatchObject({ status: 'pending', claimed_by: null, attempts: 0 });
    expect(task.status_reason).toMatch(/restarted .* handed back; not started/);
  });
});
