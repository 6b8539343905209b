/**
 * docs/cli.md against the CLI's own definitions: every command commander knows is in its table, and
 * every option of each is written out on the page, so that the reference cannot fall behind the code.
 * (test/docs.commands.test.ts checks the other way: every command the pages show exists.)
 */
import fs from 'node:fs';
import path from 'node:path';
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram, commandGroups } from '../src/cli/program.js';

const page = fs.readFileSync(path.join(import.meta.dirname, '..', 'docs', 'cli.md'), 'utf8');
/** The first cell of each row of the page's command table: the commands it describes. */
const rows = [...page.matchAll(/^\| `([^|]*(?:\\\|[^|]*)*)` \|/gm)].map((m) => m[1]!.replace(/\\\|/g, '|'));

/** Every runnable command, by its full name (`schedule add`), with the long options it defines. */
function commands(parent: Command, prefix: string[] = []): Array<{ name: string; options: string[] }> {
  return parent.commands.flatMap((c) => {
    const name = [...prefix, c.name()];
    const own = c.commands.length ? [] : [{ name: name.join(' '), options: c.options.map((o) => o.long).filter((o): o is string => Boolean(o)) }];
    return [...own, ...commands(c, name)];
  });
}

const program = buildProgram(['node', 'baton']);
const all = commands(program).filter((c) => c.name !== 'help');

/**
 * Whether a row of the table names this command: one of its cells (`a` / `b`) starts with the command's
 * group, and names the subcommand among its words (`stack start | stop | status` names all three).
 */
const named = (command: string) => {
  const [group, sub] = command.split(' ');
  return rows.some((row) => row.split(/`\s*\/\s*`/).some((cell) => {
    const words = cell.split(/[\s|]+/);
    return words[0] === group && (!sub || words.includes(sub));
  }));
};

describe('docs/cli.md', () => {
  it('finds the commands commander defines', () => {
    expect(all.length).toBeGreaterThan(40);
    expect(rows.length).toBeGreaterThan(30);
  });

  it('has every command in its table', () => {
    expect(all.map((c) => c.name).filter((name) => !named(name))).toEqual([]);
  });

  it('builds for a call only the group of the command it names, which adds the names the group says', () => {
    for (const group of commandGroups) {
      const alone = new Command('baton');
      group.register(alone);
      expect(alone.commands.flatMap((c) => [c.name(), ...c.aliases()])).toEqual(group.names);
      for (const name of group.names) {
        // The command is found after the root's options and their values, as a user types them.
        const built = buildProgram(['node', 'baton', '--json', '--url', 'http://127.0.0.1:1', name, '--help']);
        expect(built.commands.map((c) => c.name())).toEqual(alone.commands.map((c) => c.name()));
      }
    }
    expect(buildProgram(['node', 'baton', '--version']).commands).toEqual([]);
    // No command, an unknown one (commander then suggests the nearest) or help: the whole tree.
    for (const args of [[], ['--help'], ['shwo'], ['help', 'show']]) expect(buildProgram(['node', 'baton', ...args]).commands.length).toBe(program.commands.length);
  });

  it('writes out every option of every command', () => {
    const global = program.options.map((o) => o.long);
    const missing = all.flatMap((c) => c.options.filter((o) => !global.includes(o) && !new RegExp(`(^|[^a-z-])${o}(?![a-z-])`, 'm').test(page)).map((o) => `${c.name} ${o}`));
    expect(missing).toEqual([]);
  });
});
