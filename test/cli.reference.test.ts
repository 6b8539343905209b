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
/** Each row of the page's command table: its first cell (the commands it describes) and the whole line. */
const tableRows = [...page.matchAll(/^\| `([^|]*(?:\\\|[^|]*)*)` \|.*$/gm)].map((m) => ({ cell: m[1]!.replace(/\\\|/g, '|'), line: m[0] }));
const rows = tableRows.map((r) => r.cell);

/** Every runnable command, by its full name (`schedule add`), with the long options it defines. */
function commands(parent: Command, prefix: string[] = []): Array<{ name: string; options: string[]; short: Record<string, string> }> {
  return parent.commands.flatMap((c) => {
    const name = [...prefix, c.name()];
    const short = Object.fromEntries(c.options.filter((o) => o.long && o.short).map((o) => [o.long!, o.short!]));
    const own = c.commands.length ? [] : [{ name: name.join(' '), options: c.options.map((o) => o.long).filter((o): o is string => Boolean(o)), short }];
    return [...own, ...commands(c, name)];
  });
}

const program = await buildProgram(['node', 'baton']);
const all = commands(program).filter((c) => c.name !== 'help');

/**
 * Whether a row of the table names this command: one of its cells (`a` / `b`) starts with the command's
 * group, and names the subcommand among its words (`stack start | stop | status` names all three).
 */
const namesCommand = (row: string, command: string) => {
  const [group, sub] = command.split(' ');
  return row.split(/`\s*\/\s*`/).some((cell) => {
    const words = cell.split(/[\s|]+/);
    return words[0] === group && (!sub || words.includes(sub));
  });
};
const named = (command: string) => rows.some((row) => namesCommand(row, command));
/**
 * Where a command's options are written out: the rows naming it, and the section of the page that
 * shows it by example (a heading or a code line with `baton <command>`).
 */
const placesOf = (command: string): string => [
  ...tableRows.filter((r) => namesCommand(r.cell, command)).map((r) => {
    // A row may say it takes the options of another command.
    const other = /the options of `([a-z ]+)`/.exec(r.line)?.[1];
    return other && other !== command ? `${r.line}\n${placesOf(other)}` : r.line;
  }),
  ...[...page.matchAll(/^#{2,4} .*$[\s\S]*?(?=^#{2,4} |(?![\s\S]))/gm)].map((m) => m[0]).filter((section) => new RegExp(`baton ${command}(?![a-z-])`).test(section)),
].join('\n');

describe('docs/cli.md', () => {
  it('finds the commands commander defines', () => {
    expect(all.length).toBeGreaterThan(40);
    expect(rows.length).toBeGreaterThan(30);
  });

  it('has every command in its table', () => {
    expect(all.map((c) => c.name).filter((name) => !named(name))).toEqual([]);
  });

  it('builds for a call only the group of the command it names, which adds the names the group says', async () => {
    for (const group of commandGroups) {
      const alone = new Command('baton');
      (await group.load())(alone);
      expect(alone.commands.flatMap((c) => [c.name(), ...c.aliases()])).toEqual(group.names);
      for (const name of group.names) {
        // The command is found after the root's options and their values, as a user types them.
        const built = await buildProgram(['node', 'baton', '--json', '--url', 'http://127.0.0.1:1', name, '--help']);
        expect(built.commands.map((c) => c.name())).toEqual(alone.commands.map((c) => c.name()));
      }
    }
    expect((await buildProgram(['node', 'baton', '--version'])).commands).toEqual([]);
    // No command, an unknown one (commander then suggests the nearest) or help: the whole tree.
    for (const args of [[], ['--help'], ['shwo'], ['help', 'show']]) expect((await buildProgram(['node', 'baton', ...args])).commands.length).toBe(program.commands.length);
  });

  it('writes out every option of every command', () => {
    const global = program.options.map((o) => o.long);
    // Each where its command is described, not merely somewhere on the page (claim's --lease was only in handoff's row).
    const written = (o: string, text: string) => new RegExp(`(^|[^a-z-])${o}(?![a-z-])`, 'm').test(text);
    const missing = all.flatMap((c) => {
      const text = placesOf(c.name);
      return c.options.filter((o) => !global.includes(o) && !written(o, text) && !(c.short[o] && written(c.short[o], text))).map((o) => `${c.name} ${o}`);
    });
    expect(missing).toEqual([]);
  });
});
