/**
 * Codex (`@openai/codex`) as a Baton worker: `codex exec --json` in the task's folder, with a private
 * CODEX_HOME (a copy of the daemon's config.toml and auth.json, so its provider and login hold), resumed
 * with `codex exec resume <thread>` when the agent's question is answered. Its JSON lines give the thread
 * (`thread.started`), the agent's messages, and usage at `turn.completed`; on a resumed thread the usage
 * is the thread's total, so each run records the difference. Codex reports tokens, not cost.
 *
 * Codex has no list of allowed tools: it is confined by its sandbox. Baton runs it with
 * `approval_policy = "never"` (nobody is there to approve) in the `workspace-write` sandbox with network
 * access (the agent's `baton` command reaches the API); `bypassPermissions` runs it with
 * `danger-full-access` (no sandbox).
 */
import fs from 'node:fs';
import path from 'node:path';
import { runtimeHome } from '../config.js';
import type { RuntimeHome } from '../contract.js';
import { codingAgentRuntime, failureOfStatus, type CodingCli, type RunReport, type RunSetup, type Session } from './coding-agent.js';
import { readOr, sessionTotals, sinceSession, type Spent } from './spend.js';

interface CodexEvent {
  type?: string;
  thread_id?: string;
  item?: { type?: string; text?: string; message?: string };
  usage?: { input_tokens?: number; cached_input_tokens?: number; output_tokens?: number; reasoning_output_tokens?: number };
  error?: { message?: string };
  message?: string;
}

/** Codex's own folder: $CODEX_HOME, else ~/.codex. */
const home: RuntimeHome = { setting: 'CODEX_HOME', fallback: '~/.codex' };
/** The Codex settings whose provider and login a run's private home copies: the executor's CODEX_HOME, the daemon's, or ~/.codex. */
const codexHomeOf = (run: RunSetup) => run.options.env.CODEX_HOME || runtimeHome(home);

const cli: CodingCli = {
  key: 'codex',
  name: 'Codex',
  npmPackage: '@openai/codex',
  command: 'codex',
  home,
  passEnv: /^(OPENAI_|AZURE_OPENAI_|CODEX_API_KEY$)/,
  prepare(run) {
    const home = path.join(run.home, 'codex');
    fs.mkdirSync(home, { recursive: true, mode: 0o700 });
    for (const file of ['config.toml', 'auth.json']) {
      const from = path.join(codexHomeOf(run), file);
      if (fs.existsSync(from)) fs.copyFileSync(from, path.join(home, file));
      if (fs.existsSync(path.join(home, file))) fs.chmodSync(path.join(home, file), 0o600);
    }
    return { CODEX_HOME: home };
  },
  args(run, prompt, session) {
    const { options } = run;
    const settings = [
      'approval_policy="never"',
      ...(options.bypassPermissions ? ['sandbox_mode="danger-full-access"'] : ['sandbox_mode="workspace-write"', 'sandbox_workspace_write.network_access=true']),
    ].flatMap((s) => ['-c', s]);
    const common = ['--json', '--skip-git-repo-check', ...settings, ...(options.model ? ['-m', options.model] : []), ...options.args];
    return session.resumed ? ['exec', 'resume', ...common, session.id!, prompt] : ['exec', ...common, prompt];
  },
  meter(run, session) {
    // Its thread's total at each turn's end (stdout), and at each model answer (the rollout Codex writes
    // to its home as it goes, read every few seconds and once it ended): this run's spend so far.
    const base = session.resumed ? threadTotal(session) : undefined;
    const sinceRun = (total: CodexUsage) => sinceSession([countsOf(total, run)], base);
    return {
      line(text) {
        if (!text.includes('"turn.completed"')) return undefined;
        try {
          const e = JSON.parse(text) as CodexEvent;
          // `codex exec` runs one turn: its end is the run's last word on the work.
          return e.type === 'turn.completed' && e.usage ? { spent: sinceRun(e.usage), ended: true } : undefined;
        } catch { return undefined; }
      },
      look() {
        const last = rolloutTotal(path.join(run.home, 'codex', 'sessions'), session.id);
        return last ? { spent: sinceRun(last.total), ended: !last.calls } : undefined;
      },
    };
  },
  read(output, session, run) {
    const events = output.stdout.split('\n').flatMap((line) => {
      try { return [JSON.parse(line) as CodexEvent]; } catch { return []; }
    });
    const report: RunReport = { usage: [] };
    const texts: string[] = [];
    let total: CodexUsage | undefined;
    let turns = 0;
    for (const e of events) {
      if (e.type === 'thread.started' && e.thread_id) report.sessionId = e.thread_id;
      else if (e.type === 'item.completed' && e.item?.type === 'agent_message' && e.item.text) texts.push(e.item.text);
      else if (e.type === 'turn.completed') { total = e.usage; turns += 1; }
      else if (e.type === 'turn.failed' || e.type === 'error') report.failure = codexFailure(e.error?.message ?? e.message ?? 'the turn failed');
    }
    report.text = texts.at(-1);
    if (total) {
      const before = session.resumed ? threadTotal(session) : undefined;
      const now = [countsOf(total, run)];
      report.usage.push(...sinceSession(now, before).map((u) => ({ ...u, turns })));
      session.state.total = sessionTotals(now, before);
    }
    return report;
  },
};

type CodexUsage = NonNullable<CodexEvent['usage']>;
/** The thread's totals after the run before, Baton's counts (a resumed thread reports the thread's totals: sinceSession). */
const threadTotal = (session: Session) => session.state.total as Spent | undefined;

/**
 * A total Codex reported, in Baton's counts: Codex's input counts the cached tokens too, which Baton
 * counts apart; its output counts the reasoning too (the Responses API's `output_tokens`, of which
 * `reasoning_output_tokens` is a part), so that part is not added again.
 */
function countsOf(total: CodexUsage, run: RunSetup): Spent[number] {
  const cached = total.cached_input_tokens ?? 0;
  return { model: modelOf(run), inputTokens: Math.max(0, (total.input_tokens ?? 0) - cached), outputTokens: total.output_tokens ?? 0, cachedTokens: cached };
}

/**
 * The thread's total at the last model answer in the rollout Codex keeps of it, if it wrote one, and
 * whether that answer called a tool (the turn goes on).
 */
function rolloutTotal(sessions: string, thread: string | undefined): { total: CodexUsage; calls: boolean } | undefined {
  let files: string[];
  try {
    files = fs.readdirSync(sessions, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.jsonl') && (!thread || f.includes(thread)));
  } catch {
    return undefined;
  }
  let last: { total: CodexUsage; calls: boolean } | undefined;
  // An answer's items come before the record of what it cost.
  let calls = false;
  for (const file of files.sort()) {
    for (const line of readOr(path.join(sessions, file)).split('\n')) {
      if (!line.includes('"token_usage_record"') && !line.includes('"response_item"')) continue;
      try {
        const record = JSON.parse(line) as { type?: string; payload?: { type?: string; thread_token_usage?: CodexUsage } };
        if (record.type === 'response_item') calls ||= /call$/.test(record.payload?.type ?? '');
        else if (record.type === 'token_usage_record' && record.payload?.thread_token_usage) {
          last = { total: record.payload.thread_token_usage, calls };
          calls = false;
        }
      } catch { /* a line cut short as it was written */ }
    }
  }
  return last;
}

/** The model a run used: the executor's, else the one Codex's settings name. */
function modelOf(run: RunSetup): string {
  return run.options.model ?? /^\s*model\s*=\s*"([^"]+)"/m.exec(readOr(path.join(run.home, 'codex', 'config.toml')))?.[1] ?? 'codex-default';
}

/**
 * Codex gives a provider's HTTP status only in its own words ("unexpected status 401 Unauthorized: …",
 * "exceeded retry limit, last status: 429 …"): read from those phrases, never from any number in the
 * provider's message. A 5xx it words in its own way ("We're currently experiencing high demand…") has
 * no status to read: it is retried.
 */
function codexFailure(message: string): NonNullable<RunReport['failure']> {
  const status = /\b(?:unexpected status|last status:?(?: was)?) ([45]\d\d)\b/.exec(message);
  return status ? failureOfStatus(Number(status[1]), message.slice(0, 1000)) : { kind: 'retry', message: message.slice(0, 1000) };
}


export const codex = codingAgentRuntime(cli);
