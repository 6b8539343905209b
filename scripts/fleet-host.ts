/**
 * One machine of the fleet bench (scripts/fleet-bench.ts): runs a daemon for each agent token it is
 * given, in this one process: with FLEET_SHARED=1 over shared Realtime connections (one per 100
 * channels), as `baton agent run` with a config per agent does; else each with its own connection, as
 * one `baton agent run` per agent has. Each run of a task appends the task's id to FLEET_RUNS; the
 * daemons' log lines go, as JSON, to FLEET_LOG.
 */
import fs from 'node:fs';
import pino from 'pino';
import { createAgent } from '../src/agent/daemon.js';
import { processChannels } from '../src/client/channels.js';

const tokens = JSON.parse(process.env.FLEET_TOKENS ?? '[]') as string[];
const runs = process.env.FLEET_RUNS!;
const log = pino({ level: 'info' }, pino.destination({ dest: process.env.FLEET_LOG!, append: true, sync: false }));
const project = { url: process.env.SUPABASE_URL!, publishableKey: process.env.SUPABASE_PUBLISHABLE_KEY! };
const channels = process.env.FLEET_SHARED === '1' ? processChannels(project) : undefined;
const daemons = tokens.map((token) => createAgent({
  ...project, token, log, channels,
  executors: { '*': async (task) => { fs.appendFileSync(runs, `${task.id}\n`); return { status: 'success', summary: 'done' }; } },
}));
await Promise.all(daemons.map((d) => d.start()));
process.stdout.write('started\n');
const stop = () => void Promise.all(daemons.map((d) => d.stop({ graceSeconds: 5 }))).then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
