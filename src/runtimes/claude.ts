/**
 * Claude Code (`@anthropic-ai/claude-code`) as a Baton worker: `claude -p <prompt> --output-format
 * stream-json` in the task's folder (each answer of the model streams with its usage, which is
 * recorded as it comes), the session named by Baton (`--session-id`) and resumed with `--resume` when the
 * agent's question is answered. Its JSON result, the last line, gives the reply, the session, the usage and cost by
 * model (`modelUsage`, `total_cost_usd`; a resumed session's are its totals so far, so each run records
 * the difference), and what went wrong: `is_error` with `api_error_status`, and
 * `permission_denials` (a tool it needed but may not use; Claude Code still exits 0).
 *
 * The agent may use only the tools the config names (`--allowedTools`), plus `baton …` in its shell;
 * print mode refuses the rest without asking. `bypassPermissions` runs it with
 * `--dangerously-skip-permissions`, which Claude Code refuses as root unless told the machine is a
 * sandbox (`sandboxed`: IS_SANDBOX=1). Under a budget in money, `--max-budget-usd` is what is left of it.
 */
import { ConfigError } from '../config.js';
import { codingAgentRuntime, failureOfStatus, newSessionId, type CodingCli, type RunReport } from './coding-agent.js';
import { byModel, sessionTotals, sinceSession, type Spent } from './spend.js';


interface ClaudeResult {
  type?: string;
  subtype?: string;
  is_error?: boolean;
  api_error_status?: number | null;
  result?: string;
  session_id?: string;
  num_turns?: number;
  total_cost_usd?: number;
  permission_denials?: Array<{ tool_name?: string; tool_input?: unknown }>;
  modelUsage?: Record<string, { inputTokens?: number; outputTokens?: number; cacheReadInputTokens?: number; cacheCreationInputTokens?: number; costUSD?: number }>;
}

const cli: CodingCli = {
  key: 'claude',
  name: 'Claude Code',
  npmPackage: '@anthropic-ai/claude-code',
  command: 'claude',
  home: { setting: 'CLAUDE_CONFIG_DIR', fallback: '~/.claude' },
  passEnv: /^(ANTHROPIC_|CLAUDE_CODE_|DISABLE_(TELEMETRY|AUTOUPDATER|ERROR_REPORTING|NON_ESSENTIAL_MODEL_CALLS)$|AWS_|CLOUD_ML_REGION$|VERTEX_|GOOGLE_APPLICATION_CREDENTIALS$)/,
  check(options) {
    if (options.bypassPermissions && !options.sandboxed && process.getuid?.() === 0) {
      throw new ConfigError('Claude Code refuses --dangerously-skip-permissions as root: run the daemon as another user, or, if this machine is a sandbox of its own (a container or VM), say so with "sandboxed": true');
    }
  },
  prepare(run) {
    return {
      // No update checks, telemetry or error reports from a worker.
      DISABLE_AUTOUPDATER: '1', DISABLE_TELEMETRY: '1', DISABLE_ERROR_REPORTING: '1',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      ...(run.options.sandboxed ? { IS_SANDBOX: '1' } : {}),
    };
  },
  newSession: newSessionId,
  args(run, prompt, session) {
    const { options } = run;
    const tools = [...(options.tools ?? []), `Bash(${run.batonPath}:*)`];
    return [
      // Its events as they come, each model answer's usage among them (spend.ts), the result last.
      '-p', prompt, '--output-format', 'stream-json', '--verbose', '--include-partial-messages',
      ...(session.resumed ? ['--resume', session.id!] : ['--session-id', session.id!]),
      ...(options.model ? ['--model', options.model] : []),
      // Claude Code stops itself at a cost: what is left of the chain's budget in money.
      ...(run.budget?.usd !== undefined ? ['--max-budget-usd', String(run.budget.usd)] : []),
      '--allowedTools', tools.join(','),
      ...(options.bypassPermissions ? ['--dangerously-skip-permissions'] : []),
      ...options.args,
    ];
  },
  meter: () => {
    // Each answer of the model, as it streams: its input when it starts, its output as it ends. A
    // sub-agent's answers stream beside the main one's, told apart by the tool call they serve.
    const answers = new Map<string, { model: string; inputTokens: number; outputTokens: number; cachedTokens: number }>();
    const current = new Map<string, string>();
    return {
      line(text) {
        if (!text.startsWith('{"type":"stream_event"')) return undefined;
        let e: StreamEvent;
        try { e = JSON.parse(text) as StreamEvent; } catch { return undefined; }
        const lane = e.parent_tool_use_id ?? '';
        const usage = e.event?.type === 'message_start' ? e.event.message?.usage : e.event?.type === 'message_delta' ? e.event.usage : undefined;
        if (!usage) return undefined;
        if (e.event?.type === 'message_start') current.set(lane, e.event.message?.id ?? `${lane}:${answers.size}`);
        const id = current.get(lane);
        if (!id) return undefined;
        const had = answers.get(id) ?? { model: e.event?.message?.model ?? 'claude', inputTokens: 0, outputTokens: 0, cachedTokens: 0 };
        answers.set(id, {
          model: had.model,
          inputTokens: usage.input_tokens !== undefined ? usage.input_tokens + (usage.cache_creation_input_tokens ?? 0) : had.inputTokens,
          outputTokens: usage.output_tokens ?? had.outputTokens,
          cachedTokens: usage.cache_read_input_tokens ?? had.cachedTokens,
        });
        // The main conversation's answer that ends without a tool to run ends the run.
        const stop = e.event?.delta?.stop_reason;
        return { spent: byModel(answers.values()), ended: !lane && stop !== undefined && stop !== null && stop !== 'tool_use' };
      },
    };
  },
  read(output, session) {
    const result = lastResult(output.stdout);
    if (!result) return { usage: [] };
    // A resumed session reports the session's totals so far: what this run spent is the difference.
    const totals: Spent = Object.entries(result.modelUsage ?? {}).map(([model, u], i) => ({
      model,
      inputTokens: (u.inputTokens ?? 0) + (u.cacheCreationInputTokens ?? 0),
      outputTokens: u.outputTokens ?? 0,
      cachedTokens: u.cacheReadInputTokens ?? 0,
      // The turns are the session's; they go with its first model.
      turns: i === 0 ? result.num_turns ?? 0 : 0,
      ...(u.costUSD !== undefined ? { costUsd: u.costUSD } : {}),
    }));
    const before = session.resumed ? session.state.totals as Spent | undefined : undefined;
    session.state.totals = sessionTotals(totals, before);
    const report: RunReport = { sessionId: result.session_id, text: result.result, usage: sinceSession(totals, before) };
    if (result.is_error) {
      const why = (result.result ?? result.subtype ?? 'an error').slice(0, 1000);
      report.failure = result.api_error_status ? failureOfStatus(result.api_error_status, why) : { kind: 'retry', message: `the run ended in error (${result.subtype ?? 'error'}): ${why}` };
    } else if (result.permission_denials?.length) {
      const tools = [...new Set(result.permission_denials.map((d) => d.tool_name ?? 'a tool'))].join(', ');
      report.failure = { kind: 'retry', message: `the agent needed tools it may not use: ${tools} (name them in the executor's "tools" to allow them)` };
    }
    return report;
  },
};

/** One line of `stream-json` with `--include-partial-messages`: an event of the model's stream. */
interface StreamEvent {
  parent_tool_use_id?: string | null;
  event?: {
    type?: string;
    message?: { id?: string; model?: string; usage?: AnswerUsage };
    delta?: { stop_reason?: string | null };
    usage?: AnswerUsage;
  };
}
interface AnswerUsage { input_tokens?: number; output_tokens?: number; cache_read_input_tokens?: number; cache_creation_input_tokens?: number }

/** The `result` object Claude Code prints last (one JSON document; with stream-json, the last line). */
function lastResult(stdout: string): ClaudeResult | undefined {
  const text = stdout.trim();
  const tries = [text, ...text.split('\n').reverse()];
  for (const candidate of tries) {
    try {
      const parsed = JSON.parse(candidate) as ClaudeResult;
      if (parsed && typeof parsed === 'object' && parsed.type === 'result') return parsed;
    } catch { /* not this one */ }
  }
  return undefined;
}

export const claude = codingAgentRuntime(cli);
