/**
 * Every `baton …` command in the shell blocks of the README and docs/ exists, and every option it
 * gives is one the command knows: checked against the built CLI's own help, so a renamed command or
 * option breaks this test before it breaks a reader. (Those that need a hosted project cannot run
 * here; the README's tour runs whole in test/tour.test.ts.)
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliPath } from './cli.js';

const root = path.resolve(path.dirname(cliPath), '..', '..');
const pages = ['README.md', ...fs.readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => path.join('docs', f))];

/** Each `baton` invocation in a shell block: its words up to a pipe, `)`, `&&`, `;` or a comment. */
function invocations(): Array<{ page: string; line: string; words: string[] }> {
  const found: Array<{ page: string; line: string; words: string[] }> = [];
  for (const page of pages) {
    const text = fs.readFileSync(path.join(root, page), 'utf8');
    for (const [, block] of text.matchAll(/```(?:sh|bash)\n([\s\S]*?)```/g)) {
      for (const line of block!.split('\n')) {
        for (const [, rest] of line.replace(/\s#\s.*$/, '').matchAll(/(?:^|[\s($=])baton\s+([^|)&;]*)/g)) {
          const words = rest!.trim().split(/\s+/).filter(Boolean);
          if (words.length && /^[a-z]/.test(words[0]!)) found.push({ page, line: line.trim(), words });
        }
      }
    }
  }
  return found;
}

function help(words: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [cliPath, ...words, '--help'], { timeout: 30_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? Number(error.code) || 1 : 0, out: stdout + stderr }));
  });
}

describe('the baton commands in the README and docs/', () => {
  const all = invocations();

  it('are found (the pages show the CLI)', () => {
    expect(all.length).toBeGreaterThan(20);
  });

  it('name commands that exist, with options they know', async () => {
    const wrong: string[] = [];
    // Options every command takes (--json, --env-file, …) are listed by `baton --help`.
    const global = (await help([])).out;
    for (const { page, line, words } of all) {
      // The command is its leading words (a group and its subcommand, or one command), before arguments.
      const command = words.slice(0, words.findIndex((w) => !/^[a-z][a-z0-9-]*$/.test(w)) === -1 ? words.length : words.findIndex((w) => !/^[a-z][a-z0-9-]*$/.test(w)));
      let shown = await help(command.slice(0, 2));
      if (shown.code !== 0 || !shown.out.includes(`baton ${command.slice(0, 2).join(' ')}`)) shown = await help(command.slice(0, 1));
      if (shown.code !== 0) {
        wrong.push(`${page}: ${line}: no command "${command.join(' ')}"`);
        continue;
      }
      for (const option of words.filter((w) => /^--?[a-z]/.test(w)).map((w) => w.replace(/=.*$/, ''))) {
        if (option === '--help' || option === '-h') continue;
        if (!new RegExp(`(^|[\\s,])${option.replace(/-/g, '\\-')}([\\s,=<[]|$)`, 'm').test(shown.out + global)) wrong.push(`${page}: ${line}: ${option} is not an option of it`);
      }
    }
    expect(wrong).toEqual([]);
  }, 240_000);
});
