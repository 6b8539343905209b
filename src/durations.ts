/** Durations as people write them: 90s, 15m, 2h, 1d, or a number of seconds. */

const secondsPer = { s: 1, m: 60, h: 3600, d: 86_400 } as const;

export const durationExample = 'e.g. 90s, 15m, 2h or 1d';

/** The duration in seconds, or undefined when `text` is not one. */
export function parseDuration(text: string | number): number | undefined {
  if (typeof text === 'number') return Number.isFinite(text) && text > 0 ? text : undefined;
  const match = /^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$/.exec(text);
  if (!match) return undefined;
  const seconds = Number(match[1]) * secondsPer[(match[2] || 's') as keyof typeof secondsPer];
  return seconds > 0 ? seconds : undefined;
}

/** Seconds in an interval as Postgres prints it ("00:15:00", "1 day 02:00:00"); undefined if not one. */
export function intervalSeconds(text: string | null | undefined): number | undefined {
  const match = text ? /^(?:(\d+) days? )?(\d+):(\d+):(\d+(?:\.\d+)?)$/.exec(text) : null;
  if (!match) return undefined;
  return Number(match[1] ?? 0) * 86_400 + Number(match[2]) * 3600 + Number(match[3]) * 60 + Number(match[4]);
}

/** Seconds as the shortest of those forms that is exact: 900 reads 15m. */
export function formatDuration(seconds: number): string {
  for (const unit of ['d', 'h', 'm'] as const) {
    if (seconds >= secondsPer[unit] && seconds % secondsPer[unit] === 0) return `${seconds / secondsPer[unit]}${unit}`;
  }
  return `${seconds}s`;
}
