/** The Baton skill (AgentSkills' SKILL.md): where it ships, and installing it where agent runtimes load skills. */
import fs from 'node:fs';
import path from 'node:path';
import { Option, type Command } from 'commander';
import type { SkillTarget } from '../../contract.js';
import { packageRoot } from '../../stack/paths.js';
import { configOf } from '../context.js';
import { usageError } from '../exit.js';
import { emit } from '../output.js';

/** The skill as shipped in the package. */
export const skillSource = path.join(packageRoot, 'skills', 'baton');

type InstallFlags = Record<string, string | true | undefined> & { to?: string; force?: boolean };

/** Any skills folder, whoever's it is. */
const anyFolder: SkillTarget = { option: '--to <folder>', runtime: 'the folder given', help: 'any skills folder: the skill goes to <folder>/baton', folder: (to) => path.resolve(String(to)) };

/** The skills folders the flags name, each with the runtime it is for. */
function targetsOf(flags: InstallFlags, targets: readonly SkillTarget[]): Array<{ folder: string; runtime: string }> {
  return targets.flatMap((t) => {
    const value = flags[new Option(t.option).attributeName()];
    return value === undefined ? [] : [{ folder: t.folder(value), runtime: t.runtime }];
  });
}

/** Copies the skill's files into `<folder>/baton`; an existing copy that differs is kept unless forced. */
function copySkill(folder: string, force: boolean): { skill: string; state: 'installed' | 'updated' | 'unchanged' } {
  const skill = path.join(folder, 'baton');
  const files = fs.readdirSync(skillSource);
  const same = files.every((f) => {
    try {
      return fs.readFileSync(path.join(skill, f)).equals(fs.readFileSync(path.join(skillSource, f)));
    } catch {
      return false;
    }
  });
  if (same) return { skill, state: 'unchanged' };
  const existed = fs.existsSync(skill);
  if (existed && !force) {
    throw usageError(`${skill} already holds a different copy of the skill (edited, or from another Baton version)`,
      'Run again with --force to replace it with this version\'s (your edits are lost), or compare them first: baton skill path.');
  }
  fs.mkdirSync(skill, { recursive: true });
  for (const f of files) fs.copyFileSync(path.join(skillSource, f), path.join(skill, f));
  return { skill, state: existed ? 'updated' : 'installed' };
}

/** `targets`: where each runtime loads skills from (its `skills`, src/runtimes), an option each. */
export function registerSkill(program: Command, runtimeTargets: readonly SkillTarget[]): void {
  const targets = [...runtimeTargets, anyFolder];
  const skill = program.command('skill').description('the Baton skill (SKILL.md) that teaches an agent to use baton: install it for OpenClaw, Claude Code, Codex, Gemini CLI');

  skill.command('path')
    .description('print the folder of the skill shipped with this version of baton')
    .action((_opts, command: Command) => {
      emit(configOf(command), { path: skillSource }, (r) => r.path);
    });

  const install = skill.command('install')
    .description('copy the skill into the skills folder of an agent runtime (one or more of the options)');
  for (const t of targets) install.option(t.option, t.help);
  install
    .option('--force', 'replace a copy that differs (an edited one, or another version\'s)')
    .addHelpText('after', `
The skill needs \`baton\` on the PATH of the agent's shell, and SUPABASE_URL, the project's API key
(SUPABASE_PUBLISHABLE_KEY or SUPABASE_ANON_KEY) and BATON_AGENT_TOKEN in its environment; OpenClaw lists
it as ready once they are there (openclaw skills check).

Example:
  $ baton skill install --openclaw
  $ baton skill install --claude --codex --gemini`)
    .action((flags: InstallFlags, command: Command) => {
      const asked = targetsOf(flags, targets);
      if (asked.length === 0) {
        throw usageError('say where to install the skill', `Pass ${targets.map((t) => t.option).join(', ').replace(/, ([^,]*)$/, ' or $1')}.`);
      }
      const done = asked.map(({ folder, runtime }) => ({ runtime, ...copySkill(folder, Boolean(flags.force)) }));
      emit(configOf(command), done, (rows) => rows.map((r) => `${r.state === 'unchanged' ? 'already installed' : r.state}: ${r.skill} (${r.runtime})`).join('\n'));
    });
}
