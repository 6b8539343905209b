/** Daemons as real processes (`baton agent run` / `tick`) and the shell executor's outcomes. */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cliPath } from './cli.js';
import { freePort } from '../src/stack/ports.js';
import { daemon, eventually } from './daemon-helpers.js';
import { newAgent, stack, type TestAgent } from './helpers.js';

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-daemons-'));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) if (child.exitCode === null) { try { process.kill(-child.pid!, 'SIGKILL'); } catch { /* gone */ } }
  fs.rmSync(work, { recursive: true, force: true });
});

function configFile(name: string, config: unknown): string {
  const file = path.join(work, `${name}.json`);
  fs.writeFileSync(file, JSON.stringify(config));
  return file;
}

/** `baton agent <mode>` as its own process group, so that a kill reaches what it started. */
function runAgent(agent: TestAgent, mode: 'run' | 'tick', config: string) {
  let output = '';
  const child = spawn(process.execPath, [cliPath, 'agent', mode, '--config', config], {
    detached: true,
    env: { ...process.env, SUPABASE_URL: stack.SUPABASE_URL, SUPABASE_ANON_KEY: stack.SUPABASE_ANON_KEY, BATON_AGENT_TOKEN: agent.token, LOG_LEVEL: 'info' },
  });
  child.stdout!.on('data', (c: Buffer) => { output += c; });
  child.stderr!.on('data', (c: Buffer) => { output += c; });
  children.push(child);
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, exited, output: () => output };
}

const fastSchedules = { poll: '* * * * * *', heartbeat: '*/2 * * * * *' };

describe('daemons as processes', () => {
  it('never run a task twice when two daemons share one broadcast queue', async () => {
    const capability = `shared-${Date.now()}`;
    const boss = await newAgent('boss');
    const log = path.join(work, 'ran.log');
    // Each run waits for the go the test gives once both daemons hold work: a daemon at its four runs
    // claims no more, so the other takes some whichever started first (no race with its start).
    const go = path.join(work, 'go');
    const config = configFile('shared', {
      capabilities: [capability], maxConcurrent: 4, ...fastSchedules,
      executors: { '*': { command: `cat > /dev/null; echo "$BATON_TASK_ID $BATON_AGENT_ID" >> ${log}; while [ ! -e ${go} ]; do sleep 0.1; done; echo '{"status": "success"}'` } },
    });
    const workers = await Promise.all([newAgent('w1'), newAgent('w2')]);
    const daemons = workers.map((w) => runAgent(w, 'run', config));
    const tasks = await Promise.all(Array.from({ length: 24 }, (_, i) => boss.client.broadcast({ title: `job ${i}`, requiredCapabilities: [capability] })));
    const runners = () => new Set((fs.existsSync(log) ? fs.readFileSync(log, 'utf8').trim().split('\n') : []).map((line) => line.split(' ')[1]).filter(Boolean));
    await eventually(async () => runners().size === 2, 60_000, 'both daemons to hold work');
    fs.writeFileSync(go, '');
    await eventually(async () => {
      const states = await Promise.all(tasks.map((t) => boss.client.getTask(t.id)));
      return states.every((t) => t.status === 'completed');
    }, 60_000, 'every task to complete');
    for (const d of daemons) process.kill(d.child.pid!, 'SIGTERM');
    expect(await Promise.all(daemons.map((d) => d.exited))).toEqual([0, 0]);
    const ran = fs.readFileSync(log, 'utf8').trim().split('\n').map((line) => line.split(' ')[0]);
    expect(ran.sort()).toEqual(tasks.map((t) => t.id).sort());
    expect(runners().size).toBe(2);
  });

  it('re-queues the task of a daemon killed with SIGKILL mid-task, and another completes it', async () => {
    const capability = `crash-${Date.now()}`;
    const boss = await newAgent('boss');
    const doomed = await newAgent('doomed');
    const survivor = await newAgent('survivor', { capabilities: [capability] });
    const started = path.join(work, 'started');
    const config = configFile('doomed', {
      capabilities: [capability], ...fastSchedules,
      executors: { '*': { command: `touch ${started}; sleep 60` } },
    });
    const task = await boss.client.broadcast({ title: 'survive a crash', requiredCapabilities: [capability], leaseSeconds: 5 });
    const victim = runAgent(doomed, 'run', config);
    await eventually(async () => fs.existsSync(started), 20_000, 'the doomed daemon to start the task');
    expect((await boss.client.getTask(task.id)).claimed_by).toBe(doomed.id);
    process.kill(-victim.child.pid!, 'SIGKILL');
    await victim.exited;

    await daemon(survivor, { executors: { '*': () => ({ status: 'success', summary: 'picked up after a crash' }) } });
    // The survivor shares the sweep with every online agent while push is up; sweeping here as well
    // keeps the test about the crash, not about whose turn it is to sweep.
    const done = await eventually(async () => {
      await boss.client.sweep();
      const t = await boss.client.getTask(task.id);
      return t.status === 'completed' && t;
    }, 30_000, 'the survivor to finish');
    expect(done).toMatchObject({ claimed_by: survivor.id, attempts: 2, result: { summary: 'picked up after a crash' } });
    const events = await boss.client.events(task.id);
    expect(events.some((e) => e.actor === 'sweep' && e.to_status === 'pending')).toBe(true);
  });

  it('on SIGTERM releases what it could not finish, goes inactive and exits 0', async () => {
    const boss = await newAgent('boss');
    const worker = await newAgent('worker');
    const config = configFile('graceful', { ...fastSchedules, graceSeconds: 1, executors: { '*': { command: 'sleep 60' } } });
    const proc = runAgent(worker, 'run', config);
    const task = await boss.client.handoff({ to: worker.id, title: 'interrupted' });
    await eventually(async () => (await boss.client.getTask(task.id)).status === 'in_progress', 20_000, 'the task to start');
    process.kill(proc.child.pid!, 'SIGTERM');
    expect(await proc.exited).toBe(0);
    expect(await boss.client.getTask(task.id)).toMatchObject({ status: 'pending', claimed_by: null, attempts: 0 });
    expect((await boss.client.agent(worker.id)).is_active).toBe(false);
    expect(proc.output()).toMatch(/released on shutdown/);
  });

  it('`agent tick` does one round and exits', async () => {
    const boss = await newAgent('boss');
    const worker = await newAgent('ticker');
    const config = configFile('tick', { maxConcurrent: 5, executors: { '*': { command: `cat | node -e "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>console.log(JSON.stringify({status:'success',summary:JSON.parse(s).title})))"` } } });
    const tasks = await Promise.all(['one', 'two', 'three'].map((title) => boss.client.handoff({ to: worker.id, title })));
    const tick = runAgent(worker, 'tick', config);
    expect(await tick.exited).toBe(0);
    for (const task of tasks) {
      const done = await boss.client.getTask(task.id);
      expect(done).toMatchObject({ status: 'completed', result: { summary: task.title } });
    }
    expect(tick.output()).toMatch(/ran 3 task\(s\)/);
    expect((await boss.client.agent(worker.id)).last_heartbeat).not.toBeNull();
  });

  it('exits as soon as its running tasks finish, well within a long grace period', async () => {
    const boss = await newAgent('boss');
    const worker = await newAgent('worker');
    const config = configFile('quick-exit', { ...fastSchedules, graceSeconds: 600, executors: { '*': { command: 'sleep 2; echo done' } } });
    const proc = runAgent(worker, 'run', config);
    const task = await boss.client.handoff({ to: worker.id, title: 'short job' });
    await eventually(async () => (await boss.client.getTask(task.id)).status === 'in_progress', 20_000, 'the task to start');
    process.kill(proc.child.pid!, 'SIGTERM');
    // The grace period is 600 s; this test's own deadline (120 s) is far shorter, so only a daemon that
    // exits when its task finishes can pass it.
    expect(await proc.exited).toBe(0);
    expect(await boss.client.getTask(task.id)).toMatchObject({ status: 'completed', result: { summary: 'done' } });
  }, 120_000);

  it('names the field an executor is missing', async () => {
    const worker = await newAgent('misconfigured');
    const config = configFile('no-command', { executors: { code: { timeoutSeconds: 600 } } });
    const proc = runAgent(worker, 'run', config);
    expect(await proc.exited).toBe(2);
    expect(proc.output()).toMatch(/no-command.json is invalid: executors.code: needs "command" \(a shell command .*\), "module" \(.*\), "a2a" \(.*\), "openclaw" \(.*\), "claude" \(.*\), "codex" \(.*\) or "gemini"/);
  });

  it('names the variable an OpenClaw executor\'s token is missing from', async () => {
    const worker = await newAgent('misconfigured');
    const config = configFile('no-token', { executors: { '*': { openclaw: 'http://127.0.0.1:18789', tokenEnv: 'BATON_TEST_UNSET_PEER_TOKEN' } } });
    const proc = runAgent(worker, 'run', config);
    expect(await proc.exited).toBe(2);
    expect(proc.output()).toMatch(/executor "\*": BATON_TEST_UNSET_PEER_TOKEN is set neither in the environment nor in the project.s .env; it holds the token of the A2A peer that stands for Baton on the OpenClaw gateway at http:\/\/127.0.0.1:18789/);
  });

  it('refuses an invalid config file with a clear error and exit 2', async () => {
    const worker = await newAgent('misconfigured');
    const config = configFile('bad', { poll: 'every five seconds', executors: { x: { command: '' } } });
    const proc = runAgent(worker, 'run', config);
    expect(await proc.exited).toBe(2);
    expect(proc.output()).toMatch(/bad.json is invalid: poll: must be a cron expression.*executors.x/);
  });
});

describe('the shell executor', () => {
  it('completes with the JSON it prints, fails with its stderr, times out, and retries on exit 75', async () => {
    const boss = await newAgent('boss');
    const worker = await newAgent('worker');
    await daemon(worker, {
      maxConcurrent: 4,
      executors: {
        ok: { command: `read input; echo "{\\"status\\": \\"success\\", \\"summary\\": \\"task $BATON_TASK_ID attempt $BATON_ATTEMPT\\"}"` },
        broken: { command: 'echo "working..."; echo "disk full" >&2; echo "giving up" >&2; exit 3' },
        slow: { command: 'sleep 30', timeoutSeconds: 1 },
        busy: { command: 'echo "rate limited" >&2; exit 75' },
      },
    });
    const send = (type: string, maxAttempts = 3) => boss.client.handoff({ to: worker.id, title: type, payload: { task_type: type }, maxAttempts });
    const [ok, broken, slow, busy] = await Promise.all([send('ok'), send('broken'), send('slow'), send('busy', 2)]);
    const final = (id: string) => eventually(async () => { const t = await boss.client.getTask(id); return ['completed', 'failed'].includes(t.status) && t; }, 30_000, `task ${id} to finish`);
    expect((await final(ok.id)).result).toEqual({ status: 'success', summary: `task ${ok.id} attempt 1` });
    expect((await final(broken.id)).status_reason).toBe('exit 3: disk full\ngiving up');
    expect((await final(slow.id)).status_reason).toMatch(/^timed out after 1 s/);
    const retried = await final(busy.id);
    expect(retried).toMatchObject({ status: 'failed', attempts: 2, status_reason: 'exit 75 (retry): rate limited' });
    expect((await boss.client.events(busy.id)).filter((e) => e.from_status === 'pending' && e.to_status === 'in_progress')).toHaveLength(2);
  });
});

describe('the shell executor ends what it started', () => {
  it('ends, on a timeout, a process the command started in a session of its own (outside its group)', async () => {
    const boss = await newAgent('reap-boss');
    const worker = await newAgent('reap-worker');
    const pidFile = path.join(work, `escaped-${worker.id}.pid`);
    await daemon(worker, {
      // setsid: a new session and process group, which killing the command's group does not reach.
      executors: { '*': { command: `setsid sh -c 'echo $$ > ${pidFile}; exec sleep 300' & sleep 60`, timeoutSeconds: 2 } },
    });
    const task = await boss.client.handoff({ to: worker.id, title: 'escape', maxAttempts: 1 });
    await eventually(async () => (await boss.client.getTask(task.id)).status === 'failed', 30_000, 'the timeout');
    await eventually(async () => fs.existsSync(pidFile), 10_000, 'the escaped process to have written its pid');
    const escaped = Number(fs.readFileSync(pidFile, 'utf8'));
    const alive = () => { try { process.kill(escaped, 0); return true; } catch { return false; } };
    await eventually(async () => !alive(), 15_000, `the escaped process ${escaped} to end`);
  });
});

describe('a daemon process either works or exits', () => {
  it('exits non-zero before it is ever heard from when its metrics port is taken', async () => {
    const agent = await newAgent('zombie');
    const port = await freePort();
    const squatter = net.createServer().listen(port, '0.0.0.0');
    await new Promise((resolve) => squatter.once('listening', resolve));
    try {
      const config = configFile('zombie', { ...fastSchedules, metricsPort: port, executors: { '*': { command: 'cat' } } });
      const d = runAgent(agent, 'run', config);
      expect(await d.exited).toBe(2);
      expect(d.output()).toMatch(new RegExp(`cannot serve metrics on port ${port}: another process listens there \\(EADDRINUSE\\); choose another --metrics-port`));
      // It never beat: the agent's row is as the operator made it.
      const row = await agent.client.agent(agent.id);
      expect(row.incarnation).toBeNull();
    } finally {
      squatter.close();
    }
  });

  it('stops when the npx that launched it is killed, as a pidfile, `kill $!` or a service manager would', async () => {
    // A project that depends on Baton, as a user's does: `npx baton` runs its bin through npm exec and sh.
    const project = fs.mkdtempSync(path.join(work, 'project-'));
    fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'an-agent', private: true, dependencies: { 'baton-agents': '*' } }));
    fs.mkdirSync(path.join(project, 'node_modules', '.bin'), { recursive: true });
    fs.symlinkSync(path.resolve(cliPath, '..', '..', '..'), path.join(project, 'node_modules', 'baton-agents'));
    fs.symlinkSync('../baton-agents/dist/cli/index.js', path.join(project, 'node_modules', '.bin', 'baton'));
    const agent = await newAgent('npx');
    let output = '';
    const npx = spawn('npx', ['--offline', 'baton', 'agent', 'run', '--poll', '* * * * * *', '--heartbeat', '*/2 * * * * *'], {
      cwd: project,
      env: { ...process.env, SUPABASE_URL: stack.SUPABASE_URL, SUPABASE_ANON_KEY: stack.SUPABASE_ANON_KEY, BATON_AGENT_TOKEN: agent.token, LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(npx);
    npx.stdout!.on('data', (c: Buffer) => { output += c; });
    npx.stderr!.on('data', (c: Buffer) => { output += c; });
    await eventually(async () => /agent started/.test(output), 60_000, 'the daemon to start through npx');
    // The pid the caller knows is npm's; the daemon is its grandchild.
    process.kill(npx.pid!, 'SIGTERM');
    await eventually(async () => /agent stopped/.test(output), 30_000, 'the daemon to stop');
    expect(output).toMatch(/the process that launched this daemon \(npx, npm exec\) ended; stopping as on SIGTERM/);
    expect((await agent.client.agent(agent.id)).is_active).toBe(false);
  });
});
