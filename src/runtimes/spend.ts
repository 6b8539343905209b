/**
 * What a coding-agent run spent, recorded as it is read rather than when the CLI exits: a run that is
 * cancelled, timed out, stopped by its budget or crashed has its spend up to then on record, and a
 * budget can stop a run mid-way. A CLI's file says where it reads the spend (a Meter: the lines the
 * CLI prints, or what it writes to disk as it goes); this file turns the run's spend so far into
 * reports of what is new since the last one.
 */
import fs from 'node:fs';
import type { ExecutorContext } from '../contract.js';
import type { RunReport } from './coding-agent.js';

/** A run's spend by model: the run's own (not its session's), so far or in all. */
export type Spent = RunReport['usage'];

/**
 * A reading of a run's spend so far, and whether the model's answer that brought it was its last word
 * on the work (no tool to run after it: the run is ending). Under a budget this spends, a run whose
 * last word it was keeps its result; one that would go on is stopped.
 */
export interface Reading { spent: Spent; ended?: boolean }

/** Where a CLI's spend is read while it runs. */
export interface Meter {
  /** A line the CLI printed, as it comes: a reading when the line says more. */
  line?(text: string): Reading | undefined;
  /** What the CLI wrote to disk so far (its session's record), read every few seconds and once it ended. */
  look?(): Reading | undefined;
}

/** How often a meter's `look` reads what the CLI wrote while it runs. */
export const LOOK_EVERY_MS = 2_000;

type Counts = Spent[number];
/** The counts a reading carries besides its model; cost only where the CLI reports one. */
const COUNTS = ['inputTokens', 'outputTokens', 'cachedTokens', 'turns', 'costUsd'] as const;
const zero = (model: string): Counts => ({ model, inputTokens: 0, outputTokens: 0, cachedTokens: 0, turns: 0 });

/** Each count of `a` and `b` put together by `join`; a cost only where either has one. */
function combine(a: Counts, b: Counts, join: (x: number, y: number) => number): Counts {
  const out: Counts = { model: a.model, inputTokens: 0, outputTokens: 0 };
  for (const k of COUNTS) if (k !== 'costUsd' || a[k] !== undefined || b[k] !== undefined) out[k] = join(a[k] ?? 0, b[k] ?? 0);
  return out;
}

/** Reports what is new in each reading, one at a time, in order. */
export class SpendRecorder {
  private readonly recorded = new Map<string, Counts>();
  private chain: Promise<void> = Promise.resolve();
  private failure: unknown;

  constructor(private readonly ctx: Pick<ExecutorContext, 'usage'>, private readonly runtime: string, private readonly sessionId: () => string | undefined) {}

  /**
   * The run's spend so far; what it adds to what was recorded is reported. `ended`: the run had ended
   * when this was read (it keeps its result under a budget that this spends; ctx.usage says so).
   */
  upTo(soFar: Spent | undefined, { ended = false } = {}): void {
    if (!soFar?.length) return;
    this.chain = this.chain.then(() => this.record(soFar, ended)).catch((err: unknown) => { this.failure ??= err; });
  }

  /** Once every report is made; a report that failed is thrown here. */
  async settled(): Promise<void> {
    await this.chain;
    if (this.failure) throw this.failure;
  }

  private async record(soFar: Spent, ended: boolean): Promise<void> {
    for (const now of soFar) {
      const had = this.recorded.get(now.model) ?? zero(now.model);
      const added = combine(now, had, (x, y) => Math.max(0, x - y));
      if (now.costUsd === undefined) delete added.costUsd;
      if (!COUNTS.some((k) => added[k])) continue;
      this.recorded.set(now.model, combine(now, had, Math.max));
      await this.ctx.usage({ ...added, runtime: this.runtime, sessionId: this.sessionId() }, { ended });
    }
  }
}

/**
 * A run's own spend, from its session's totals after the run and before it, by model: a CLI that
 * reports a resumed session's totals (Claude Code's `modelUsage`, Codex's thread total, Gemini CLI's
 * record of the session) counts what the runs before spent too. A model's total below the one before
 * (its input, cached or not, only grows within a session) is the run's own: the CLI counted afresh.
 */
export function sinceSession(now: Spent, before: Spent | undefined): Spent {
  return now.map((m) => {
    const had = before?.find((b) => b.model === m.model);
    const spent = had && !afresh(m, had) ? combine(m, had, (x, y) => Math.max(0, x - y)) : { ...m };
    if (m.costUsd === undefined) delete spent.costUsd;
    return spent;
  });
}

/** The session's totals after a run, for the next run of it to subtract: what the CLI reported, or added to the totals before where it counted afresh. */
export function sessionTotals(now: Spent, before: Spent | undefined): Spent {
  const totals = new Map((before ?? []).map((b) => [b.model, b]));
  for (const m of now) {
    const had = totals.get(m.model);
    totals.set(m.model, had && afresh(m, had) ? combine(m, had, (x, y) => x + y) : m);
  }
  return [...totals.values()];
}

const afresh = (now: Counts, had: Counts) => now.inputTokens + (now.cachedTokens ?? 0) < had.inputTokens + (had.cachedTokens ?? 0);

/** The spend by model in one list, adding up what the entries say of each model. */
export function byModel(entries: Iterable<Counts>): Spent {
  const sums = new Map<string, Counts>();
  for (const e of entries) sums.set(e.model, combine(e, sums.get(e.model) ?? zero(e.model), (x, y) => x + y));
  return [...sums.values()];
}

/** A file's text, or nothing where it cannot be read (not written yet, or gone). */
export function readOr(file: string): string {
  try { return fs.readFileSync(file, 'utf8'); } catch { return ''; }
}
