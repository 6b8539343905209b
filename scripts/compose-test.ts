/**
 * The compose project, checked end to end on a real Docker engine, from a bare machine of this kind:
 *
 * 1. installs and starts the engine if it is missing, and builds the base image if no registry gives it;
 * 2. builds Baton's image and brings the project up (stack, setup, researcher, coder, auditor and two
 *    generic agents), each agent in its own container;
 * 3. hands the demo's first task to the researcher and waits for the whole chain, across containers;
 * 4. kills (SIGKILL) a generic agent's container mid-task and waits for another to finish the task, then
 *    stops (SIGTERM) the next holder mid-task and sees the work released and finished elsewhere;
 * 5. `down` keeps the data volume, `down -v` removes it; the engine it started is stopped again.
 *
 * Nothing is left running. Every step says how long it took.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import dotenv from 'dotenv';
import { createBatonClient, finalStatuses, type BatonClient, type LineageRow, type Task } from '../src/index.js';
import { lineageTree, shortId } from '../src/text/render.js';
import { demoFinished, demoRequest } from '../src/demo/executors.js';
import { freePort } from '../src/stack/ports.js';
import { dockerClient, ensureBaseImage, ensureEngine, read, sh, stopEngine } from './docker-base.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const IMAGE = 'baton-agents:local';
const project = `baton-check-${process.pid}`;
const t0 = Date.now();
const say = (text: string) => process.stdout.write(`${text}\n`);
const clock = () => `${((Date.now() - t0) / 1000).toFixed(0).padStart(4)} s`;
const step = (text: string) => say(`${clock()}  ${text}`);

/** `docker compose` where the plugin is there, else Compose 1's `docker-compose`. */
const composeCommand: [string, ...string[]] = read('docker', ['compose', 'version']) !== undefined ? ['docker', 'compose'] : ['docker-compose'];

async function waitFor<T>(what: string, seconds: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${seconds} s`);
    await sleep(500);
  }
}

/** The npm configuration this machine reaches the registry with, handed to the build as secrets. */
function npmSecrets(): string[] {
  const secrets: string[] = [];
  const userConfig = path.join(os.homedir(), '.npmrc');
  if (fs.existsSync(userConfig)) secrets.push('--secret', `id=npmrc,src=${userConfig}`);
  const cafile = read('npm', ['config', 'get', 'cafile'])?.trim();
  if (cafile && cafile !== 'null' && fs.existsSync(cafile)) secrets.push('--secret', `id=npm_ca,src=${cafile}`);
  return secrets;
}

let engine: number | undefined;
let up = false;
let exitCode = 1;
const apiPort = await freePort();
const env = { ...process.env, BATON_API_PORT: String(apiPort), BATON_WORKERS: '4', COMPOSE_PROJECT_NAME: project };
const compose = (...args: string[]) => sh(composeCommand[0], [...composeCommand.slice(1), '-f', path.join(root, 'docker-compose.yml'), ...args], { env, cwd: root });
const composeRead = (...args: string[]) => read(composeCommand[0], [...composeCommand.slice(1), '-f', path.join(root, 'docker-compose.yml'), ...args], env);

/** The generic agents' containers, by the identity each took from the pool. */
function workerContainers(): Map<string, string> {
  const byAgent = new Map<string, string>();
  for (const id of (composeRead('ps', '-q', 'agent') ?? '').split('\n').filter(Boolean)) {
    const said = read('docker', ['logs', id])?.match(/acts as (worker-\d+)/)?.[1];
    if (said) byAgent.set(said, id);
  }
  return byAgent;
}

/** Hands a task to the generic agents, waits until one runs it, and returns it with that agent's container. */
async function startWork(lead: BatonClient, title: string, seconds: number): Promise<{ task: Task; holder: string; container: string }> {
  const task = await lead.broadcast({ title, requiredCapabilities: ['work'], payload: { task_type: 'work', seconds }, leaseSeconds: 5 });
  const running = await waitFor(`"${title}" started`, 60, async () => {
    const shown = await lead.getTask(task.id);
    return shown.status === 'in_progress' && shown.claimed_by ? shown : undefined;
  });
  const container = workerContainers().get(running.claimed_by!);
  if (!container) throw new Error(`no container says it acts as ${running.claimed_by}`);
  return { task, holder: running.claimed_by!, container };
}

/** Waits until the task is completed by another agent than `holder`, and says who. */
async function finishedElsewhere(lead: BatonClient, task: Task, holder: string): Promise<string> {
  const done = await waitFor(`"${task.title}" finished by another agent`, 120, async () => {
    const shown = await lead.getTask(task.id);
    if (shown.status === 'failed') throw new Error(`"${task.title}" failed: ${shown.status_reason}`);
    return shown.status === 'completed' ? shown : undefined;
  });
  if (done.claimed_by === holder) throw new Error(`${holder} finished "${task.title}" itself; expected another agent to`);
  return done.claimed_by!;
}

try {
  engine = await ensureEngine();
  ensureBaseImage();
  step('engine and base image ready');
  sh(dockerClient(), ['build', '-q', ...npmSecrets(), '-t', IMAGE, root], { env: { ...process.env, DOCKER_BUILDKIT: '1' }, quiet: true });
  step(`built ${IMAGE}`);
  sh(composeCommand[0], [...composeCommand.slice(1), '-f', path.join(root, 'docker-compose.hosted.yml'), 'config', '-q'], { env, cwd: root });

  up = true;
  compose('up', '-d', '--scale', 'agent=2');
  step(`project ${project} up: stack healthy, setup done, 5 agent containers`);

  const leadEnv = dotenv.parse(composeRead('run', '--rm', '-T', '--no-deps', '--entrypoint', 'cat', 'lead', '/tokens/lead.env') ?? '');
  if (!leadEnv.BATON_AGENT_TOKEN) throw new Error('setup left no /tokens/lead.env');
  const lead = createBatonClient({ url: `http://127.0.0.1:${apiPort}`, publishableKey: leadEnv.SUPABASE_PUBLISHABLE_KEY!, token: leadEnv.BATON_AGENT_TOKEN });

  // Round 1: the demo's chain, every agent in its own container.
  const first = await lead.handoff(demoRequest);
  let chain: LineageRow[] = [];
  await waitFor('the demo chain finished', 180, async () => {
    chain = await lead.chain(first.id);
    if (chain.some((r) => r.status === 'failed')) throw new Error(`a task failed: ${chain.find((r) => r.status === 'failed')!.status_reason}`);
    return demoFinished(chain) ? chain : undefined;
  });
  const producers = new Set(chain.map((r) => r.producer));
  if (!['researcher', 'coder', 'auditor'].every((id) => producers.has(id))) throw new Error(`expected the researcher, coder and auditor to produce; got ${[...producers].join(', ')}`);
  step(`demo chain finished across containers: ${chain.length} tasks`);
  say(lineageTree(chain).replace(/^/gm, '        '));

  // Round 2: SIGKILL mid-task; the lease lapses, the sweep re-queues, the other container finishes.
  const killed = await startWork(lead, 'work through a container kill', 15);
  sh('docker', ['kill', killed.container], { quiet: true });
  step(`killed ${killed.holder}'s container mid-task (${shortId(killed.task.id)})`);
  const afterKill = await finishedElsewhere(lead, killed.task, killed.holder);
  step(`${afterKill} finished it`);

  // Round 3: SIGTERM mid-task (docker stop); the daemon waits its grace (10 s), releases the task, another
  // finishes it. The killed container stayed down (a kill is a manual stop); up starts it again.
  compose('up', '-d', '--scale', 'agent=2');
  const stopped = await startWork(lead, 'work through a container stop', 25);
  sh('docker', ['stop', stopped.container], { quiet: true });
  step(`stopped ${stopped.holder}'s container mid-task (${shortId(stopped.task.id)})`);
  const afterStop = await finishedElsewhere(lead, stopped.task, stopped.holder);
  step(`${afterStop} finished it`);

  const open = (await lead.chain(first.id)).filter((r) => !finalStatuses.includes(r.status));
  if (open.length) throw new Error(`tasks left open: ${open.map((r) => r.title).join(', ')}`);

  compose('down');
  if (read('docker', ['volume', 'inspect', `${project}_stack-data`]) === undefined) throw new Error('`down` removed the data volume');
  compose('down', '-v');
  up = false;
  if (read('docker', ['volume', 'inspect', `${project}_stack-data`]) !== undefined) throw new Error('`down -v` left the data volume');
  step('down kept the data volume; down -v removed it');
  exitCode = 0;
} catch (err) {
  say(`\ncompose check failed: ${(err as Error).message}`);
  if (up) composeRead('logs', '--no-color', '--tail', '30')?.split('\n').forEach((line) => say(`  ${line}`));
} finally {
  if (up) composeRead('down', '-v', '--remove-orphans');
  const left = read('docker', ['ps', '-aq', '--filter', `label=com.docker.compose.project=${project}`])?.trim();
  if (left) say(`containers left behind: ${left}`);
  if (engine) await stopEngine(engine);
  say(`${clock()}  ${exitCode === 0 ? 'compose check passed' : 'compose check FAILED'}; nothing of it is left running${engine ? ' (the engine it started is stopped)' : ''}`);
}
process.exit(exitCode);
