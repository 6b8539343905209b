/** All command output goes through here: one JSON document with --json, aligned text otherwise. */
import { safeText } from '../text/format.js';

export interface OutputOptions {
  json?: boolean;
}

/**
 * A copy of `value` whose strings, at any depth, are safe to print. Walked without recursion: JSON
 * stored before the database limited its depth may nest deeper than the call stack goes (on Node 24,
 * 2,000 levels overflowed it).
 */
function safe<T>(value: T): T {
  const root: Record<string, unknown> = { value };
  const todo: Array<[Record<string | number, unknown>, string | number]> = [[root, 'value']];
  for (let next = todo.pop(); next; next = todo.pop()) {
    const [holder, key] = next;
    const v = holder[key];
    if (typeof v === 'string') {
      holder[key] = safeText(v);
    } else if (Array.isArray(v)) {
      const copy: unknown[] = v.slice();
      holder[key] = copy;
      for (let i = 0; i < copy.length; i++) todo.push([copy as unknown as Record<number, unknown>, i]);
    } else if (v && typeof v === 'object') {
      const copy = Object.fromEntries(Object.entries(v).map(([k, x]) => [safeText(k), x]));
      holder[key] = copy;
      for (const k of Object.keys(copy)) todo.push([copy, k]);
    }
  }
  return root.value as T;
}

/**
 * Prints `value` as JSON, or what `human` renders from it. Everything the database returns is text
 * other agents wrote, so it is made safe before it is rendered (JSON escapes it by itself).
 */
export function emit<T>(options: OutputOptions, value: T, human: (value: T) => string): void {
  const text = options.json ? JSON.stringify(value, null, 2) : human(safe(value));
  if (text) process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
}
