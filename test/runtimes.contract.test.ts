/**
 * The runtimes stand on one contract: what a runtime file declares (its folder, where its skills go) is
 * what the rest derives, so that the next runtime is one file (docs/architecture.md, "Adding a runtime").
 * `baton skill install` takes an option per runtime's skills folder and nothing else knows them.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runtimes } from '../src/runtimes/index.js';
import { sessionTotals, sinceSession } from '../src/runtimes/spend.js';
import { baton } from './cli.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Every .ts file under a folder. */
function sourcesUnder(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => path.join(e.parentPath, e.name));
}

describe('the agent runtimes', () => {
  const targets = runtimes.flatMap((r) => (r.skills ?? []).map((t) => ({ ...t, key: r.key })));

  it('each declare where their skills go, and baton skill install offers exactly those', async () => {
    // Each says, an empty list where it loads no skills of its own.
    expect(runtimes.filter((r) => !r.skills).map((r) => r.key)).toEqual([]);
    const help = await baton(['skill', 'install', '--help']);
    expect(help.code, help.stderr).toBe(0);
    // The command's own options, not the global ones listed after them.
    const own = help.stdout.slice(help.stdout.indexOf('Options:'), help.stdout.indexOf('Global Options:'));
    const offered = [...own.matchAll(/^\s+(--[a-z-]+(?: <[a-z]+>)?)/gm)].map((m) => m[1]).filter((o) => o !== '--help');
    expect(offered.sort()).toEqual([...targets.map((t) => t.option), '--to <folder>', '--force'].sort());
    const none = await baton(['skill', 'install']);
    expect(none.code).toBe(2);
    for (const t of targets) expect(none.stderr).toContain(t.option);
  });

  it.each(runtimes.filter((r) => r.skills?.some((t) => !t.option.includes('<'))).map((r) => r.key))(
    '%s: the skill goes where the runtime\'s own variable puts its folder', async (key) => {
      const target = targets.find((t) => t.key === key && !t.option.includes('<'))!;
      // The variable the help names, set to a folder of this test's own.
      const variable = /\$([A-Z_]+)/.exec(target.help)![1]!;
      const folder = fs.mkdtempSync(path.join(os.tmpdir(), `baton-${key}-home-`));
      const installed = await baton(['skill', 'install', target.option, '--json'], { [variable]: folder });
      expect(installed.code, installed.stderr).toBe(0);
      const [row] = JSON.parse(installed.stdout) as Array<{ skill: string; state: string }>;
      expect(row!.state).toBe('installed');
      expect(row!.skill.startsWith(folder + path.sep)).toBe(true);
      expect(fs.existsSync(path.join(row!.skill, 'SKILL.md'))).toBe(true);
      fs.rmSync(folder, { recursive: true, force: true });
    });

  it('have their own variables named nowhere outside src/runtimes/', () => {
    const variables = targets.map((t) => /\$([A-Z_]+)/.exec(t.help)?.[1]).filter((v): v is string => Boolean(v));
    expect(variables.length).toBeGreaterThan(0);
    const elsewhere = sourcesUnder(path.join(root, 'src'))
      .filter((file) => !file.startsWith(path.join(root, 'src', 'runtimes') + path.sep))
      .flatMap((file) => variables.filter((v) => fs.readFileSync(file, 'utf8').includes(v)).map((v) => `${path.relative(root, file)}: ${v}`));
    expect(elsewhere).toEqual([]);
  });
});

describe('a resumed session\'s spend (src/runtimes/spend.ts), one rule for every CLI', () => {
  const m = (inputTokens: number, outputTokens: number, cachedTokens: number, costUsd?: number) =>
    ({ model: 'm', inputTokens, outputTokens, cachedTokens, turns: 0, ...(costUsd === undefined ? {} : { costUsd }) });

  it('is the session\'s totals less those before the run; a total that fell is the run\'s own', () => {
    expect(sinceSession([m(1500, 300, 900, 0.5)], [m(1000, 100, 400, 0.25)])).toEqual([m(500, 200, 500, 0.25)]);
    expect(sinceSession([m(200, 30, 0)], [m(1000, 100, 400)])).toEqual([m(200, 30, 0)]);
    expect(sinceSession([m(200, 30, 0)], undefined)).toEqual([m(200, 30, 0)]);
    // The totals the next run subtracts: the reported ones, or added to those before where the CLI counted afresh.
    expect(sessionTotals([m(1500, 300, 900)], [m(1000, 100, 400)])).toEqual([m(1500, 300, 900)]);
    expect(sessionTotals([m(200, 30, 0)], [m(1000, 100, 400)])).toEqual([m(1200, 130, 400)]);
  });
});
