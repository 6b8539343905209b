/**
 * Baton's main job, end to end, with nobody in the middle: on the embedded stack, three daemons run as
 * separate processes (researcher, coder, auditor) with deterministic built-in executors. One task goes to
 * the researcher; the rest is handed along by the agents themselves:
 *
 *   researcher → competitors.json → coder → api-comparison.json → auditor finds a problem → coder fixes
 *   it → auditor passes.
 *
 * Progress streams while it runs; at the end it prints the lineage tree and the artifacts, stops
 * everything it started and exits 0. No LLM, no network.
 *
 * With --board (npm run demo -- --board) it also serves the web board, slows each step to a pace a
 * person can follow, waits for Enter before the first hand-off (at a terminal), and keeps everything
 * running after the chain is done until Ctrl-C.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createAdminClient, createBatonClient, parseSigningKey, startStack, type LineageRow } from '../src/index.js';
import { bytes, lineageTree, shortId } from '../src/text/render.js';
import { demoFinished, demoRequest } from '../src/demo/executors.js';
import { freePort } from '../src/stack/ports.js';
import { BoardData } from '../src/board/data.js';
import { startBoard, type Board } from '../src/board/server.js';
import { silentLogger } from '../src/logger.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const cli = path.join(root, 'dist', 'cli', 'index.js');
const executors = path.join(root, 'dist', 'demo', 'executors.js');
const withBoard = process.argv.includes('--board');
const TIMEOUT_MS = withBoard ? 180_000 : 60_000;
const t0 = Date.now();
const say = (text: string) => process.stdout.write(`${text}\n`);
const clock = () => `${((Date.now() - t0) / 1000).toFixed(1).padStart(5)}s`;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-demo-'));
fs.chmodSync(dir, 0o755); // as root, Postgres runs as "postgres" and must enter it
const daemons: ChildProcess[] = [];
let board: Board | undefined;
// However this process ends (Ctrl-C included), its daemons and its folder go with it.
process.on('exit', () => {
  for (const d of daemons) d.kill('SIGTERM');
  fs.rmSync(dir, { recursive: true, force: true });
});
let exitCode = 1;

say('Starting the embedded stack (Postgres, migrations via the Supabase CLI, PostgREST, gateway)…');
const apiPort = await freePort();
const stack = await startStack({ dir, apiPort, dbPort: await freePort([apiPort]) });
try {
  const { env } = stack;
  say(`${clock()}  API ready at ${env.SUPABASE_URL}/rest/v1`);
  const admin = createAdminClient({ url: env.SUPABASE_URL, secretKey: env.SUPABASE_SECRET_KEY, signingKey: parseSigningKey(env.BATON_SIGNING_KEY, 'BATON_SIGNING_KEY') });

  const team = [
    { id: 'researcher', capabilities: ['research'], executor: 'research' },
    { id: 'coder', capabilities: ['code'], executor: 'compare' },
    { id: 'auditor', capabilities: ['audit'], executor: 'audit' },
  ];
  for (const member of team) {
    const { token } = await admin.createAgent({ id: member.id, displayName: member.id, capabilities: member.capabilities });
    const config = path.join(dir, `${member.id}.json`);
    fs.writeFileSync(config, JSON.stringify({
      capabilities: member.capabilities, poll: '* * * * * *', heartbeat: '*/5 * * * * *',
      executors: { [member.executor]: { module: executors, export: member.executor } },
    }));
    const log = fs.openSync(path.join(dir, `${member.id}.log`), 'a');
    daemons.push(spawn(process.execPath, [cli, 'agent', 'run', '--config', config], {
      stdio: ['ignore', log, log],
      env: {
        ...process.env, SUPABASE_URL: env.SUPABASE_URL, SUPABASE_PUBLISHABLE_KEY: env.SUPABASE_PUBLISHABLE_KEY, BATON_AGENT_TOKEN: token, LOG_LEVEL: 'info',
        ...(withBoard ? { BATON_DEMO_STEP_MS: '2500' } : {}),
      },
    }));
  }
  say(`${clock()}  started 3 daemons as separate processes: ${team.map((m) => m.id).join(', ')}`);

  const { token } = await admin.createAgent({ id: 'lead', displayName: 'the person asking' });
  const lead = createBatonClient({ url: env.SUPABASE_URL, publishableKey: env.SUPABASE_PUBLISHABLE_KEY, token });
  if (withBoard) {
    board = await startBoard({ data: new BoardData({ kind: 'operator', admin }), log: silentLogger });
    say(`\n${clock()}  the board, as the operator: ${board.url}`);
    if (process.stdin.isTTY) {
      say('         open it in a browser, then press Enter to hand off the first task');
      await new Promise((resolve) => process.stdin.once('data', resolve));
      process.stdin.pause();
    }
  }
  const task = await lead.handoff(demoRequest);
  say(`${clock()}  lead → researcher: "${task.title}" (${shortId(task.id)}), expecting competitors.json\n`);

  const seen = new Map<string, string>();
  let chain: LineageRow[] = [];
  while (!demoFinished(chain)) {
    if (Date.now() - t0 > TIMEOUT_MS) throw new Error(`the chain did not finish within ${TIMEOUT_MS / 1000} s`);
    if (chain.some((r) => r.status === 'failed')) throw new Error(`a task failed: ${chain.find((r) => r.status === 'failed')!.status_reason}`);
    chain = await lead.chain(task.id);
    for (const row of chain) {
      const state = `${row.status}|${row.progress_message ?? ''}`;
      if (seen.get(row.id) === state) continue;
      seen.set(row.id, state);
      const who = (row.producer ?? row.to_agent ?? `any[${row.required_capabilities.join(',')}]`).padEnd(11);
      const detail = row.status === 'in_progress' && row.progress_message ? `${row.progress_percent ?? '?'}% ${row.progress_message}`
        : row.status === 'completed' ? `${row.summary ?? ''}${row.outputs.length ? ` → ${row.outputs.map((o) => o.name).join(', ')}` : ''}` : '';
      say(`${clock()}  ${who}  ${row.status.padEnd(11)}  ${row.title}${detail ? `: ${detail}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }

  say('\nLineage (baton chain):');
  say(lineageTree(chain));
  say('\nArtifacts:');
  for (const row of chain) {
    for (const output of row.outputs) {
      say(`  ${output.name.padEnd(20)} ${bytes(output.size_bytes).padStart(8)}  sha256 ${output.sha256}  by ${output.producer} in ${shortId(row.id)}`);
    }
  }
  say(`\nDone in ${clock().trim()}: ${chain.length} tasks, handed along by the agents with nobody in the middle.`);
  exitCode = 0;
  if (board) {
    say(`\nThe board stays up at ${board.url}\nCtrl-C${process.stdin.isTTY ? ' or Enter' : ''} stops it, the daemons and the stack.`);
    // On Ctrl-C the embedded Postgres's exit hook stops the database and ends this process; the exit
    // handler above ends the daemons and removes the folder then.
    await new Promise((resolve) => { if (process.stdin.isTTY) process.stdin.resume().once('data', resolve); });
  }
} catch (err) {
  say(`\ndemo failed: ${(err as Error).message}`);
  for (const member of ['researcher', 'coder', 'auditor']) {
    const log = path.join(dir, `${member}.log`);
    if (fs.existsSync(log)) say(`--- ${member}.log (last lines)\n${fs.readFileSync(log, 'utf8').trim().split('\n').slice(-8).join('\n')}`);
  }
} finally {
  await board?.close();
  await Promise.all(daemons.map((d) => new Promise<void>((resolve) => {
    // Already gone (by exit or by a signal): its exit event will not come again.
    if (d.exitCode !== null || d.signalCode !== null) return resolve();
    d.once('exit', () => resolve());
    d.kill('SIGTERM');
  })));
  await stack.stop();
  fs.rmSync(dir, { recursive: true, force: true });
  say('Stopped the daemons and the stack; removed the throwaway folder.');
}
process.exit(exitCode);
