/**
 * Gemini CLI (`@google/gemini-cli`) as a Baton worker: `gemini -p <prompt> -o json` in the task's
 * folder, with a private HOME whose `.gemini/settings.json` is the daemon's (or, without one, API-key
 * sign-in: non-interactive mode exits 41 when no sign-in is chosen). The session is named by Baton
 * (`--session-id`) and resumed with `--resume`. Its JSON gives the reply, the session, and tokens by
 * model (`stats.models`, the router's included); Gemini CLI reports tokens, not cost.
 *
 * The agent may use only the tools the config names (rules of its policy engine in the private home),
 * plus `baton …` in its shell;
 * `bypassPermissions` runs it with `--approval-mode yolo`. Baton trusts the task's folder for the run
 * (`--skip-trust`): it is made for the task and holds only what the task brought.
 */
import fs from 'node:fs';
import path from 'node:path';
import { runtimeHome } from '../config.js';
import { codingAgentRuntime, failureOfStatus, newSessionId, type CodingCli, type RunReport } from './coding-agent.js';
import { byModel, readOr, sinceSession, type Spent } from './spend.js';

interface GeminiTokens { input?: number; prompt?: number; candidates?: number; cached?: number; thoughts?: number }
interface GeminiOutput {
  session_id?: string;
  response?: string;
  error?: { type?: string; message?: string; code?: number | string };
  stats?: {
    models?: Record<string, { api?: { totalRequests?: number }; tokens?: GeminiTokens }>;
    tools?: { totalDecisions?: { reject?: number }; byName?: Record<string, { decisions?: { reject?: number } }> };
  };
}

const cli: CodingCli = {
  key: 'gemini',
  name: 'Gemini CLI',
  npmPackage: '@google/gemini-cli',
  command: 'gemini',
  // GEMINI_CLI_HOME stands for the home folder, under which Gemini CLI keeps .gemini.
  home: { setting: 'GEMINI_CLI_HOME', fallback: '~', within: '.gemini' },
  passEnv: /^(GEMINI_|GOOGLE_(API_KEY|GEMINI_BASE_URL|CLOUD_PROJECT|CLOUD_LOCATION|GENAI_USE_VERTEXAI|APPLICATION_CREDENTIALS)$)/,
  prepare(run) {
    const dir = path.join(run.home, '.gemini');
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const own = path.join(runtimeHome(cli.home), 'settings.json');
    const settings = fs.existsSync(own) ? fs.readFileSync(own, 'utf8') : JSON.stringify({ security: { auth: { selectedType: 'gemini-api-key' } } });
    fs.writeFileSync(path.join(dir, 'settings.json'), settings, { mode: 0o600 });
    // The tools the agent may use, as rules of Gemini CLI's policy engine: each named tool, and `baton`.
    const rules = [
      // A shell the config allows may redirect output to files (the policy engine asks first, otherwise).
      ...(run.options.tools ?? []).map((tool) => `[[rule]]\ntoolName = ${JSON.stringify(tool)}\ndecision = "allow"\npriority = 100\nallowRedirection = true\n`),
      `[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = ${JSON.stringify(`${run.batonPath} `)}\ndecision = "allow"\npriority = 100\n`,
    ];
    fs.mkdirSync(path.join(dir, 'policies'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'policies', 'baton.toml'), rules.join('\n'));
    // Gemini CLI otherwise starts itself again in a child Node with more memory: about 9 s a run.
    return { GEMINI_CLI_NO_RELAUNCH: 'true' };
  },
  newSession: newSessionId,
  args(run, prompt, session) {
    const { options } = run;
    return [
      '-p', prompt, '-o', 'json', '--skip-trust',
      ...(session.resumed ? ['--resume', session.id!] : ['--session-id', session.id!]),
      ...(options.model ? ['-m', options.model] : []),
      ...(options.bypassPermissions ? ['--approval-mode', 'yolo'] : []),
      ...options.args,
    ];
  },
  meter(run, session) {
    // Gemini CLI prints what a run spent only at its end; its record of the session, which it appends
    // to as each answer comes, has each answer's tokens. What the session had before this run is not
    // this run's.
    const before = sessionSpend(run.home, session.id).spent;
    return {
      look: () => {
        const now = sessionSpend(run.home, session.id);
        return { spent: sinceSession(now.spent, before), ended: !now.calls };
      },
    };
  },
  read(output) {
    const parsed = lastJson(output.stdout);
    if (!parsed) {
      // An API error ends the run with nothing on stdout and the provider's answer in the log.
      const api = /ApiError: \{"error":\{"code":(\d{3}),"message":"((?:[^"\\]|\\.)*)"/.exec(output.stderr);
      return { usage: [], ...(api ? { failure: failureOfStatus(Number(api[1]), api[2]!) } : {}) };
    }
    // Its stats at the end are this process's own (a resumed session's earlier runs are not in them):
    // nothing to subtract, unlike its session record above.
    const usage = Object.entries(parsed.stats?.models ?? {}).map(([model, m]) => ({
      model,
      inputTokens: m.tokens?.input ?? Math.max(0, (m.tokens?.prompt ?? 0) - (m.tokens?.cached ?? 0)),
      outputTokens: (m.tokens?.candidates ?? 0) + (m.tokens?.thoughts ?? 0),
      cachedTokens: m.tokens?.cached ?? 0,
      turns: m.api?.totalRequests ?? 0,
    }));
    const report: RunReport = { sessionId: parsed.session_id, text: parsed.response, usage };
    if (parsed.error) {
      const message = (parsed.error.message ?? parsed.error.type ?? 'an error').slice(0, 1000);
      // The provider's status as Gemini CLI reports it (error.code), not a number found in the words.
      const status = Number(parsed.error.code);
      report.failure = status >= 400 && status < 600 ? failureOfStatus(status, message) : { kind: 'retry', message };
    } else if (parsed.stats?.tools?.totalDecisions?.reject) {
      const tools = Object.entries(parsed.stats.tools.byName ?? {}).filter(([, t]) => t.decisions?.reject).map(([name]) => name).join(', ');
      report.failure = { kind: 'retry', message: `the agent needed tools it may not use: ${tools || 'a tool'} (name them in the executor's "tools" to allow them)` };
    }
    return report;
  },
};

/** A message of Gemini CLI's session record (`~/.gemini/tmp/<project>/chats/session-….jsonl`). */
interface RecordedMessage { id?: string; type?: string; model?: string; tokens?: { input?: number; output?: number; cached?: number; thoughts?: number } | null; toolCalls?: unknown[] }

/**
 * What the session `id` spent by model, from its record in the run's home: each answer's tokens, the
 * last word on each message kept (a message is written again as it grows).
 */
function sessionSpend(home: string, id: string | undefined): { spent: Spent; calls: boolean } {
  const root = path.join(home, '.gemini', 'tmp');
  let files: string[];
  try {
    files = fs.readdirSync(root, { recursive: true, encoding: 'utf8' }).filter((f) => /(^|\/)chats\/session-[^/]*\.jsonl$/.test(f));
  } catch {
    return { spent: [], calls: false };
  }
  const answers = new Map<string, RecordedMessage>();
  for (const file of files) {
    const lines = readOr(path.join(root, file)).split('\n');
    const records = lines.flatMap((line) => { try { return [JSON.parse(line) as { sessionId?: string; $set?: { messages?: RecordedMessage[] } } & RecordedMessage]; } catch { return []; } });
    if (id && records[0]?.sessionId !== id) continue;
    for (const r of records) {
      for (const m of r.$set?.messages ?? [r]) if (m.type === 'gemini' && m.id && m.tokens) answers.set(m.id, m);
    }
  }
  // Whether the last answer called a tool (the run goes on); its calls may be written just after it.
  const calls = Boolean([...answers.values()].at(-1)?.toolCalls?.length);
  const spent = byModel([...answers.values()].map((m) => ({
    model: m.model ?? 'gemini',
    inputTokens: Math.max(0, (m.tokens!.input ?? 0) - (m.tokens!.cached ?? 0)),
    outputTokens: (m.tokens!.output ?? 0) + (m.tokens!.thoughts ?? 0),
    cachedTokens: m.tokens!.cached ?? 0,
    turns: 1,
  })));
  return { spent, calls };
}

/** The JSON document Gemini CLI prints (pretty-printed, after any log lines). */
function lastJson(stdout: string): GeminiOutput | undefined {
  const start = stdout.indexOf('{');
  if (start < 0) return undefined;
  try {
    return JSON.parse(stdout.slice(start)) as GeminiOutput;
  } catch {
    return undefined;
  }
}

export const gemini = codingAgentRuntime(cli);
