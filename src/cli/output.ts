/** All command output goes through here: one JSON document with --json, aligned text otherwise. */
import { stripVTControlCharacters, styleText } from 'node:util';

export interface OutputOptions {
  json?: boolean;
}

const useColor = () => process.stdout.isTTY && !process.env.NO_COLOR;

export function paint(style: Parameters<typeof styleText>[0], text: string): string {
  return useColor() ? styleText(style, text) : text;
}

/** Prints `value` as JSON, or what `human` renders from it. */
export function emit<T>(options: OutputOptions, value: T, human: (value: T) => string): void {
  const text = options.json ? JSON.stringify(value, null, 2) : human(value);
  if (text) process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
}

export type Column<T> = [header: string, cell: (row: T) => string | number | null | undefined];

export function table<T>(rows: T[], columns: Column<T>[], empty = '(none)'): string {
  if (rows.length === 0) return empty;
  const cells = rows.map((row) => columns.map(([, cell]) => String(cell(row) ?? '-')));
  const headers = columns.map(([header]) => header);
  const width = (text: string) => stripVTControlCharacters(text).length;
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => width(r[i]!))));
  const line = (values: string[]) =>
    values.map((v, i) => (i === values.length - 1 ? v : v + ' '.repeat(widths[i]! - width(v)))).join('  ');
  return [paint('bold', line(headers)), ...cells.map(line)].join('\n');
}

/** A `key  value` block for one record. */
export function fields(entries: Array<[string, string | number | null | undefined]>): string {
  const keyWidth = Math.max(...entries.map(([k]) => k.length));
  return entries.map(([k, v]) => `${paint('dim', k.padEnd(keyWidth))}  ${v ?? '-'}`).join('\n');
}

export function ago(iso: string | null, now = Date.now()): string {
  if (!iso) return 'never';
  const seconds = Math.round((now - Date.parse(iso)) / 1000);
  if (seconds < 60) return `${Math.max(seconds, 0)}s ago`;
  if (seconds < 3600) return `${Math.round(seconds / 60)}m ago`;
  if (seconds < 86400) return `${Math.round(seconds / 3600)}h ago`;
  return `${Math.round(seconds / 86400)}d ago`;
}
