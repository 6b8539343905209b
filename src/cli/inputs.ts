/** Parsing of command-line values; a malformed value is a usage error (exit 2) that names the option. */
import fs from 'node:fs';
import { InvalidArgumentError } from 'commander';
import { durationExample, parseDuration } from '../durations.js';
import type { ExpectedOutput } from '../schemas.js';

/** Collects repeatable, comma-separated values: `-c a,b -c c` gives [a, b, c]. */
export function list(value: string, previous: string[] = []): string[] {
  return [...previous, ...value.split(',').map((s) => s.trim()).filter(Boolean)];
}

/** Any whole number; the database judges whether it is in range. */
export function integer(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n)) throw new InvalidArgumentError('expected a whole number.');
  return n;
}

export function wholeNumber(min: number, max: number) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min || n > max) throw new InvalidArgumentError(`expected a whole number from ${min} to ${max}.`);
    return n;
  };
}

/** A count of tokens: 250000, 250k or 1.5M. */
export function tokens(value: string): number {
  const match = /^(\d+(?:\.\d+)?)([kKmM]?)$/.exec(value.replace(/[_,]/g, ''));
  const n = match ? Math.round(Number(match[1]) * ({ k: 1e3, m: 1e6 }[match[2]!.toLowerCase() as 'k' | 'm'] ?? 1)) : NaN;
  if (!(n > 0)) throw new InvalidArgumentError('expected a number of tokens such as 250000, 250k or 1.5M.');
  return n;
}

/** An amount in US dollars: 5, 2.50 or $2.50. */
export function dollars(value: string): number {
  const n = Number(value.replace(/^\$/, ''));
  if (!(n > 0) || !Number.isFinite(n)) throw new InvalidArgumentError('expected an amount in dollars such as 5 or 2.50.');
  return n;
}

const units = { m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** `+30m`, `+2h`, `+7d` from now, or an ISO 8601 timestamp. */
export function deadline(value: string): string {
  const relative = /^\+(\d+)([mhd])$/.exec(value);
  if (relative) return new Date(Date.now() + Number(relative[1]) * units[relative[2] as keyof typeof units]).toISOString();
  if (/^\d{4}-\d{2}-\d{2}/.test(value) && !Number.isNaN(Date.parse(value))) return new Date(value).toISOString();
  throw new InvalidArgumentError('expected +30m, +2h, +7d or an ISO timestamp such as 2026-12-01T17:00:00Z.');
}

/** A duration such as 30m, 12h or 90d, as a Date that far in the future. */
export function expiresIn(value: string): Date {
  const match = /^(\d+)([mhd])$/.exec(value);
  if (!match) throw new InvalidArgumentError('expected a duration such as 30m, 12h or 90d.');
  return new Date(Date.now() + Number(match[1]) * units[match[2] as keyof typeof units]);
}

/** How often something happens: 90s, 15m, 2h, 1d or seconds; in seconds. */
export function every(value: string): number {
  const seconds = parseDuration(value);
  if (seconds === undefined) throw new InvalidArgumentError(`expected a duration, ${durationExample}.`);
  return seconds;
}

/** JSON given inline, as @file, or as - for standard input. */
export function json(value: string): unknown {
  let text = value;
  try {
    if (value === '-') text = fs.readFileSync(0, 'utf8');
    else if (value.startsWith('@')) text = fs.readFileSync(value.slice(1), 'utf8');
  } catch (err) {
    throw new InvalidArgumentError(`cannot read ${value === '-' ? 'standard input' : value.slice(1)}: ${(err as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new InvalidArgumentError(`not valid JSON (${(err as Error).message}).`);
  }
}

/** `name=@file` (the file's bytes) or `name=text`, collected for --artifact. */
export function collectArtifact(value: string, previous: Array<[string, Buffer]> = []): Array<[string, Buffer]> {
  const eq = value.indexOf('=');
  if (eq < 1) throw new InvalidArgumentError('expected name=@file or name=text, e.g. report.md=@out/report.md.');
  const name = value.slice(0, eq);
  const source = value.slice(eq + 1);
  let content: Buffer;
  try {
    content = source.startsWith('@') ? fs.readFileSync(source.slice(1)) : Buffer.from(source, 'utf8');
  } catch (err) {
    throw new InvalidArgumentError(`cannot read ${source.slice(1)}: ${(err as Error).message}`);
  }
  return [...previous, [name, content]];
}

/** `task:name` naming an artifact of an earlier task, collected for --input. */
export function collectInput(value: string, previous: Array<{ task: string; name: string }> = []): Array<{ task: string; name: string }> {
  const colon = value.indexOf(':');
  if (colon < 1 || colon === value.length - 1) throw new InvalidArgumentError('expected <task>:<name>, e.g. 3f2a1b:competitors.json.');
  return [...previous, { task: value.slice(0, colon), name: value.slice(colon + 1) }];
}

/** `name[=media/type]`, with the schema from --output-schema attached later, collected for --expect. */
export function collectExpected(required: boolean) {
  return (value: string, previous: ExpectedOutput[] = []): ExpectedOutput[] => {
    const [name, mediaType] = value.split('=', 2);
    if (!name) throw new InvalidArgumentError('expected name or name=media/type, e.g. report.json=application/json.');
    return [...previous, { name, ...(mediaType ? { media_type: mediaType } : {}), required }];
  };
}
