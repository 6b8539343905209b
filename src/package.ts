/** What Baton reads of its own package: its version, the Node it needs, and the migrations it brings. */
import { readdirSync, readFileSync } from 'node:fs';
import { packageRoot } from './stack/paths.js';

export const { version, engines } = JSON.parse(readFileSync(`${packageRoot}/package.json`, 'utf8')) as { version: string; engines: { node: string } };

/** The newest migration this package brings (its version: the file name's timestamp). */
export function packageSchemaLevel(): string {
  const versions = readdirSync(`${packageRoot}/supabase/migrations`).map((f) => /^(\d+)_.*\.sql$/.exec(f)?.[1]).filter((v): v is string => Boolean(v));
  return versions.sort().at(-1) ?? 'none';
}

/** What `baton --version` prints: the version first (what scripts compare), then the schema it brings. */
export const versionLine = (): string => `${version} (migrations to ${packageSchemaLevel()})`;

/**
 * What to say when this Node is older than the one package.json's engines names (">=22.15.0"), else
 * undefined. npm only warns about it at install; the CLI refuses at once, saying what to install,
 * rather than failing later on a missing API.
 */
export function nodeTooOld(running = process.versions.node, needed = engines.node): string | undefined {
  const parts = (v: string) => (/(\d+)\.(\d+)\.(\d+)/.exec(v) ?? []).slice(1).map(Number);
  const [have, want] = [parts(running), parts(needed)];
  const older = want.findIndex((n, i) => have[i] !== n);
  if (older === -1 || have[older]! > want[older]!) return undefined;
  return `Baton needs Node ${needed.replace(/^>=\s*/, '')} or later, and this is Node ${running}: install a current Node (nodejs.org, or your system's packages) and run it again`;
}

