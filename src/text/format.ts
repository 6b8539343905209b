/** Text for a terminal: colour when it may, aligned tables, key-value blocks, ages, and text made safe to print. */
import { stripVTControlCharacters, styleText } from 'node:util';
import { processSettings } from '../config.js';

const useColor = () => process.stdout.isTTY && processSettings.color();

export function paint(style: Parameters<typeof styleText>[0], text: string): string {
  return useColor() ? styleText(style, text) : text;
}

/**
 * Characters that would let text from another agent drive the terminal: C0 controls but tab and
 * newline, DEL, C1 controls (ESC sequences, OSC titles, clear screen, carriage-return overwrites) and
 * the bidirectional overrides that reorder what is shown.
 */
const unsafe = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** `text` with every unsafe character shown as an escape (\u001b) instead of acting on the terminal. */
export function safeText(text: string): string {
  return text.replace(unsafe, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
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
