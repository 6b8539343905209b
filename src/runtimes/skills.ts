/** Where Baton's skill goes for a runtime that loads skills from its own folder (`baton skill install --<key>`). */
import path from 'node:path';
import { runtimeHome } from '../config.js';
import type { RuntimeHome, SkillTarget } from '../contract.js';

/** The `skills` folder in the runtime's own folder, wherever its variable puts that. */
export function skillsInHome(key: string, runtime: string, home: RuntimeHome): SkillTarget {
  const under = (folder: string) => path.posix.join(folder, home.within ?? '', 'skills');
  return {
    option: `--${key}`,
    runtime,
    help: `${runtime}: ${under(`$${home.setting}`)}, else ${under(home.fallback)}`,
    folder: () => path.join(runtimeHome(home), 'skills'),
  };
}
