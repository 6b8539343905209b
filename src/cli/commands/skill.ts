/** The Baton skill (AgentSkills' SKILL.md): where it ships, and installing it where agent runtimes load skills. */
import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { packageRoot } from '../../stack/paths.js';
import { runtimeHomes } from '../../config.js';
import { configOf } from '../context.js';
import { usageError } from '../exit.js';
import { emit } from '../output.js';

/** The skill as shipped in the package. */
export const skillSource = path.join(packageRoot, 'skills', 'baton');

interface InstallFlags {
  openclaw?: boolean;
  openclawWorkspace?: string;
  claude?: boolean;
  codex?: boolean;
  gemini?: boolean;
  to?: string;
  force?: boolean;
}

/** The skills folders the flags name, each with the runtime it is for. */
function targetsOf(flags: InstallFlags): Array<{ folder: string; runtime: string }> {
  const targets: Array<{ folder: string; runtime: string }> = [];
  if (flags.openclaw) targets.push({ folder: path.join(runtimeHomes.openclaw(), 'skills'), runtime: 'OpenClaw (every agent of the gateway)' });
  if (flags.openclawWorkspace) targets.push({ folder: path.join(path.resolve(flags.openclawWorkspace), 'skills'), runtime: 'OpenClaw (the agent of this workspace)' });
  if (flags.claude) targets.push({ folder: path.join(runtimeHomes.claude(), 'skills'), runtime: 'Claude Code' });
  if (flags.codex) targets.push({ folder: path.join(runtimeHomes.codex(), 'skills'), runtime: 'Codex' });
  if (flags.gemini) targets.push({ folder: path.join(runtimeHomes.gemini(), 'skills'), runtime: 'Gemini CLI' });
  if (flags.to) targets.push({ folder: path.resolve(flags.to), runtime: 'the folder given' });
  return targets;
}

/** Copies the skill's files into `<folder>/baton`; an existing copy that differs is kept unless forced. */
function install(folder: string, force: boolean): { skill: string; state: 'installed' | 'updated' | 'unchanged' } {
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

export function registerSkill(program: Command): void {
  const skill = program.command('skill').description('the Baton skill (SKILL.md) that teaches an agent to use baton: install it for OpenClaw, Claude Code, Codex, Gemini CLI');

  skill.command('path')
    .description('print the folder of the skill shipped with this version of baton')
    .action((_opts, command: Command) => {
      emit(configOf(command), { path: skillSource }, (r) => r.path);
    });

  skill.command('install')
    .description('copy the skill into the skills folder of an agent runtime (one or more of the options)')
    .option('--openclaw', 'OpenClaw\'s shared skills: $OPENCLAW_STATE_DIR/skills, else ~/.openclaw/skills')
    .option('--openclaw-workspace <folder>', 'one OpenClaw agent\'s workspace: <folder>/skills')
    .option('--claude', 'Claude Code: $CLAUDE_CONFIG_DIR/skills, else ~/.claude/skills')
    .option('--codex', 'Codex: $CODEX_HOME/skills, else ~/.codex/skills')
    .option('--gemini', 'Gemini CLI: ~/.gemini/skills ($GEMINI_CLI_HOME/.gemini/skills if set)')
    .option('--to <folder>', 'any skills folder: the skill goes to <folder>/baton')
    .option('--force', 'replace a copy that differs (an edited one, or another version\'s)')
    .addHelpText('after', `
The skill needs \`baton\` on the PATH of the agent's shell, and SUPABASE_URL, the project's API key
(SUPABASE_PUBLISHABLE_KEY or SUPABASE_ANON_KEY) and BATON_AGENT_TOKEN in its environment; OpenClaw lists
it as ready once they are there (openclaw skills check).

Example:
  $ baton skill install --openclaw
  $ baton skill install --claude --codex --gemini`)
    .action((flags: InstallFlags, command: Command) => {
      const targets = targetsOf(flags);
      if (targets.length === 0) {
        throw usageError('say where to install the skill', 'Pass --openclaw, --openclaw-workspace <folder>, --claude, --codex, --gemini or --to <folder>.');
      }
      const done = targets.map(({ folder, runtime }) => ({ runtime, ...install(folder, Boolean(flags.force)) }));
      emit(configOf(command), done, (rows) => rows.map((r) => `${r.state === 'unchanged' ? 'already installed' : r.state}: ${r.skill} (${r.runtime})`).join('\n'));
    });
}
