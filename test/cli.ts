/** Runs the built CLI as a separate process, as a user or a script would. */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { agentKeyEnv } from './keys-mode.js';

export const cliPath = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'cli', 'index.js');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export function baton(args: string[], env: Record<string, string | undefined> = {}, cwd?: string): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(process.execPath, [cliPath, ...args], {
      env: { ...process.env, NO_COLOR: '1', SUPABASE_URL: '', BATON_AGENT_TOKEN: '', ...env },
      cwd,
      timeout: 120_000,
    }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
    });
  });
}

/** Runs the CLI as the agent holding `token`, against the test stack. */
export function cliAs(token: string | undefined, stack: { SUPABASE_URL: string; SUPABASE_PUBLISHABLE_KEY: string; SUPABASE_ANON_KEY: string }) {
  return (...args: string[]) => baton(args, { SUPABASE_URL: stack.SUPABASE_URL, ...agentKeyEnv(stack), BATON_AGENT_TOKEN: token });
}

/** Parses stdout as the one JSON document `--json` promises. */
export function parsed<T = any>(result: CliResult): T { // eslint-disable-line @typescript-eslint/no-explicit-any
  if (result.code !== 0) throw new Error(`exit ${result.code}: ${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}
