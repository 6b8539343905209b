/**
 * How a task's progress and an agent's rhythm are said, the same on every surface: the CLI, MCP and
 * the web board (which bundles this file, so it imports nothing of Node's).
 */
import { formatDuration, intervalSeconds } from '../durations.js';
import { finalStatuses } from '../statuses.js';

const ended = new Set<string>(finalStatuses);

/**
 * "60% half way", "half way" or "60%"; null when there is none, or once the task has ended (its last
 * progress is no longer news: the status and the result say how it went).
 */
export function progressText(t: { status: string; progress_percent: number | null; progress_message: string | null }): string | null {
  if (ended.has(t.status)) return null;
  const percent = t.progress_percent === null ? null : `${t.progress_percent}%`;
  if (percent === null && !t.progress_message) return null;
  return [percent, t.progress_message].filter(Boolean).join(' ');
}

/** "15m", from the interval Postgres prints ("00:15:00", "1 day 02:00:00"); undefined when not said. */
export function rhythmOf(agent: { poll_interval: string | null }): string | undefined {
  const seconds = intervalSeconds(agent.poll_interval);
  return seconds === undefined ? agent.poll_interval ?? undefined : formatDuration(seconds);
}

/** An amount of money as people write it, as the database's budget words do: "$0.70", "$1.2345". */
export function usd(amount: number): string {
  return `$${amount.toFixed(4).replace(/0{1,2}$/, '')}`;
}

/** "1200 of 1000 tokens and $0.50 of $0.40": what a budget spent against its limits, as a person reads it. */
export function budgetAmounts(b: { tokens_limit: number | null; tokens_spent: number; usd_limit: number | null; usd_spent: number }): string {
  return [
    b.tokens_limit !== null ? `${b.tokens_spent} of ${b.tokens_limit} tokens` : undefined,
    b.usd_limit !== null ? `${usd(b.usd_spent)} of ${usd(b.usd_limit)}` : undefined,
  ].filter(Boolean).join(' and ');
}
