/**
 * `baton doctor`: what stands between this folder and a working agent, each finding with what to do.
 * It reads and asks; it writes nothing, so it is no heartbeat either.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { processSettings, projectRoot, type BatonConfig } from '../../config.js';
import { paint } from '../../text/format.js';
import { checkApi, configOf } from '../context.js';
import { exitCodes } from '../exit.js';
import { emit } from '../output.js';
import { nodeTooOld, packageSchemaLevel, version } from '../../package.js';

type Verdict = 'ok' | 'warn' | 'fail';

export interface Finding {
  check: string;
  verdict: Verdict;
  said: string;
  /** What to do about it, for a warning or a failure. */
  fix?: string;
}

/** Settings that must not be readable by others: whoever holds one acts as the project or an agent. */
const secretNames = ['SUPABASE_SECRET_KEY', 'SUPABASE_SERVICE_ROLE_KEY', 'MC_SERVICE_KEY', 'SUPABASE_JWT_SECRET', 'BATON_SIGNING_KEY', 'BATON_AGENT_TOKEN', 'MC_AGENT_TOKEN', 'DATABASE_URL'];

/** A clock this far from the API's misjudges tokens' lifetimes and agents' heartbeats. */
const SKEW_LIMIT_S = 30;
/** A token that ends this soon is worth a warning. */
const TOKEN_WARN_DAYS = 7;

function nodeFinding(): Finding {
  const tooOld = nodeTooOld();
  if (tooOld) return { check: 'node', verdict: 'fail', said: tooOld };
  const major = Number(process.versions.node.split('.')[0]);
  if (major < 24) {
    return {
      check: 'node', verdict: 'warn', said: `Node ${process.versions.node}: supported, and Baton's suite runs on Node 24, the current long-term release (OpenClaw needs it too)`,
      fix: 'Move to Node 24 when you can; everything works on this one.',
    };
  }
  return { check: 'node', verdict: 'ok', said: `Node ${process.versions.node}` };
}

/** Where the settings come from, and whether a file holding secrets is readable by others. */
function settingsFinding(cwd: string): Finding {
  const envFile = processSettings.envFile();
  const named = envFile ? path.resolve(cwd, envFile) : undefined;
  const file = named ?? path.join(projectRoot(cwd), '.env');
  if (!fs.existsSync(file)) {
    return { check: 'settings', verdict: 'ok', said: `no .env here or in a folder above; settings come from flags and the environment` };
  }
  const text = fs.readFileSync(file, 'utf8');
  const secrets = secretNames.filter((name) => new RegExp(`^\\s*(export\\s+)?${name}\\s*=`, 'm').test(text));
  const mode = fs.statSync(file).mode & 0o777;
  if (secrets.length && mode & 0o077) {
    return {
      check: 'settings', verdict: 'warn', said: `${file} holds ${secrets.join(', ')} and others may read it (mode ${mode.toString(8)})`,
      fix: `chmod 600 ${file}`,
    };
  }
  return { check: 'settings', verdict: 'ok', said: `${file}${secrets.length ? ' (readable by its owner only)' : ''}` };
}

/** The local stack: when no SUPABASE_URL names a project, or when the folder has one (SUPABASE_URL may point at it). */
async function stackFinding(config: BatonConfig): Promise<Finding | undefined> {
  if (config.url && !fs.existsSync(config.stackDir)) return undefined;
  const { stackHealth } = await import('../../stack/background.js');
  const health = await stackHealth(config.stackDir);
  const dir = `--dir ${config.stackDir}`;
  if (!health.running) {
    return {
      check: 'stack', verdict: config.url ? 'warn' : 'fail',
      said: config.url ? `no stack runs in ${config.stackDir} (SUPABASE_URL names ${config.url})` : `SUPABASE_URL is not set and no stack runs in ${config.stackDir}`,
      fix: `Start it (baton stack start ${dir})${config.url ? ' if SUPABASE_URL is this stack\'s' : ', or set SUPABASE_URL and its keys for a hosted project'}.`,
    };
  }
  if (!health.api || !health.database) {
    const down = [health.api ? undefined : 'its API', health.database ? undefined : 'its database'].filter(Boolean).join(' and ');
    return { check: 'stack', verdict: 'fail', said: `the stack in ${config.stackDir} runs, but ${down} does not answer`, fix: `See its log (baton stack status ${dir}), or restart it (baton stack stop ${dir} && baton stack start ${dir}).` };
  }
  return { check: 'stack', verdict: 'ok', said: `running in ${config.stackDir}, API on port ${health.runtime!.apiPort}, database on ${health.runtime!.dbPort}` };
}

/** Runs `check`, turning what it throws into a failed finding that says why and what to do. */
async function attempt(check: string, run: () => Promise<Finding>): Promise<Finding> {
  try {
    return await run();
  } catch (err) {
    const e = err as Error & { hint?: string | null };
    return { check, verdict: 'fail', said: e.message, ...(e.hint ? { fix: e.hint } : {}) };
  }
}

/** The API with its key, and the clock against the API's. */
async function apiFindings(config: BatonConfig): Promise<Finding[]> {
  const findings: Finding[] = [];
  let skewSeconds: number | undefined;
  findings.push(await attempt('api', async () => {
    const sent = Date.now();
    const { url } = await checkApi({ ...config, agentToken: undefined }, (res) => {
      const date = Date.parse(res.headers.get('date') ?? '');
      if (Number.isFinite(date)) skewSeconds = (date - (sent + Date.now()) / 2) / 1000;
    });
    return { check: 'api', verdict: 'ok', said: `${url} answers and takes the API key` };
  }));
  if (skewSeconds !== undefined) {
    const off = Math.abs(skewSeconds);
    findings.push(off > SKEW_LIMIT_S
      ? { check: 'clock', verdict: 'warn', said: `this machine's clock is ${Math.round(off)} s ${skewSeconds > 0 ? 'behind' : 'ahead of'} the API's`, fix: 'Turn on time sync (timedatectl set-ntp true, or chrony): token lifetimes and heartbeats are judged by the clock.' }
      : { check: 'clock', verdict: 'ok', said: `within ${SKEW_LIMIT_S} s of the API's` });
  }
  return findings;
}

/** The agent token: whose, until when, and whether the project takes it. */
async function tokenFinding(config: BatonConfig): Promise<Finding> {
  if (!config.agentToken) {
    return { check: 'agent', verdict: 'warn', said: 'BATON_AGENT_TOKEN is not set: agent commands (claim, handoff, ...) cannot run', fix: 'Register one with baton agent create <id> --write-env <the agent\'s folder>/.env and run it there, or set BATON_AGENT_TOKEN to the token it printed.' };
  }
  return attempt('agent', async () => {
    const { decodeJwt } = await import('jose');
    let claims: { agent_id?: unknown; exp?: number };
    try {
      claims = decodeJwt(config.agentToken!);
    } catch {
      return { check: 'agent', verdict: 'fail', said: 'BATON_AGENT_TOKEN is not a JWT', fix: 'Set it to the token printed by baton agent create or baton agent token.' };
    }
    await checkApi(config);
    const who = typeof claims.agent_id === 'string' ? `agent "${claims.agent_id}"` : 'a token without agent_id';
    if (claims.exp === undefined) return { check: 'agent', verdict: 'ok', said: `${who}, accepted; it does not expire` };
    const left = claims.exp * 1000 - Date.now();
    const hours = Math.max(0, Math.round(left / 3_600_000));
    const until = `expires ${new Date(claims.exp * 1000).toISOString()} (in ${hours < 48 ? `${hours} hours` : `${Math.round(hours / 24)} days`})`;
    if (left < TOKEN_WARN_DAYS * 86_400_000) {
      return { check: 'agent', verdict: 'warn', said: `${who}, accepted; it ${until}`, fix: `Issue a new one before then: baton agent token ${typeof claims.agent_id === 'string' ? claims.agent_id : '<id>'} --write-env <file>.` };
    }
    return { check: 'agent', verdict: 'ok', said: `${who}, accepted; it ${until}` };
  });
}

/** The operator's key, needed only for operator commands. */
async function operatorFinding(config: BatonConfig): Promise<Finding> {
  if (!config.secretKey && !config.serviceRoleKey) {
    return { check: 'operator', verdict: 'ok', said: 'no secret key here: operator commands (agent create, board --as operator) are for the machine that holds it' };
  }
  return attempt('operator', async () => {
    const { adminClient } = await import('../context.js');
    const agents = await (await adminClient(config)).listAgents();
    return { check: 'operator', verdict: 'ok', said: `the secret key works: ${agents.length} agent(s) registered` };
  });
}

/** This Baton, and the migration the database has reached against the newest this package brings. */
async function schemaFinding(config: BatonConfig, tokenWorks: boolean): Promise<Finding> {
  const mine = packageSchemaLevel();
  const ours = `baton ${version} brings migrations to ${mine}`;
  const operator = Boolean(config.secretKey || config.serviceRoleKey);
  if (!operator && !(config.agentToken && tokenWorks)) {
    return { check: 'schema', verdict: 'ok', said: `${ours}; the database's level is read with a working BATON_AGENT_TOKEN or the secret key, and neither is here` };
  }
  return attempt('schema', async () => {
    const [{ unwrap }, { z }] = await Promise.all([import('../../client/connection.js'), import('zod')]);
    const { agentClient, adminClient } = await import('../context.js');
    const db = operator ? (await adminClient(config)).db : (await agentClient(config)).db;
    const upgrade = 'Apply this package\'s migrations (docs/upgrading.md: baton stack start on the embedded stack, supabase db push on a hosted project).';
    let level: string | null;
    try {
      level = await unwrap(db.rpc('schema_level'), z.string().nullable());
    } catch (err) {
      if ((err as { code?: string }).code !== 'PGRST202') throw err;
      return { check: 'schema', verdict: 'warn', said: `${ours}; the database is older than 0.2.0 (it has no schema_level)`, fix: upgrade };
    }
    if (level === null) return { check: 'schema', verdict: 'warn', said: `${ours}; the database recorded no migration (applied by hand?)`, fix: 'Apply the migrations with the Supabase CLI (docs/hosted-supabase.md), which records each one.' };
    if (level === mine) return { check: 'schema', verdict: 'ok', said: `${ours}; the database is at ${level}, the same` };
    if (level < mine) return { check: 'schema', verdict: 'warn', said: `${ours}; the database is at ${level}, older`, fix: upgrade };
    return { check: 'schema', verdict: 'warn', said: `${ours}; the database is at ${level}, newer than this package`, fix: 'Upgrade baton here (npm install baton-agents@latest): a newer database serves older code, but this code lacks what it added.' };
  });
}

export async function diagnose(config: BatonConfig, cwd = process.cwd()): Promise<Finding[]> {
  const findings: Finding[] = [nodeFinding(), settingsFinding(cwd)];
  const stack = await stackFinding(config);
  if (stack) findings.push(stack);
  if (stack?.verdict === 'fail') return findings;
  // With SUPABASE_URL set, the project is asked even when a local stack is down: it may be another.
  findings.push(...await apiFindings(config));
  if (findings.some((f) => f.check === 'api' && f.verdict === 'fail')) return findings;
  const token = await tokenFinding(config);
  findings.push(token, await operatorFinding(config), await schemaFinding(config, token.verdict !== 'fail'));
  return findings;
}

const mark: Record<Verdict, string> = { ok: paint('green', 'ok  '), warn: paint('yellow', 'warn'), fail: paint('red', 'FAIL') };

export function registerDoctor(program: Command): void {
  program.command('doctor')
    .description('check what this folder needs to work (Node, settings, stack or project, API key, clock, agent token, secret key) and say what to do; writes nothing')
    .addHelpText('after', `
Exit code 0 when nothing failed (warnings allowed), 1 when something did. With --json, the findings as
[{check, verdict, said, fix}].

Example:
  $ baton doctor
  $ baton doctor --json | jq '.[] | select(.verdict != "ok")'`)
    .action(async (_opts, command: Command) => {
      const config = configOf(command);
      const findings = await diagnose(config);
      emit(config, findings, (all) => all.map((f) => `${mark[f.verdict]}  ${f.check.padEnd(9)} ${f.said}${f.fix ? `\n${' '.repeat(16)}${paint('dim', `→ ${f.fix}`)}` : ''}`).join('\n'));
      if (findings.some((f) => f.verdict === 'fail')) process.exitCode = exitCodes.refused;
    });
}
