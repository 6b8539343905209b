/** All command output goes through here: one JSON document with --json, aligned text otherwise. */
import { safeText } from '../text/format.js';

export interface OutputOptions {
  json?: boolean;
}

/** A copy of `value` whose strings, at any depth, are safe to print. */
function safe<T>(value: T): T {
  if (typeof value === 'string') return safeText(value) as T;
  if (Array.isArray(value)) return value.map(safe) as T;
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [safeText(k), safe(v)])) as T;
  }
  return value;
}

/**
 * Prints `value` as JSON, or what `human` renders from it. Everything the database returns is text
 * other agents wrote, so it is made safe before it is rendered (JSON escapes it by itself).
 */
export function emit<T>(options: OutputOptions, value: T, human: (value: T) => string): void {
  const text = options.json ? JSON.stringify(value, null, 2) : human(safe(value));
  if (text) process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
}
