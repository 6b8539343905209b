/** Runs the built CLI as a separate process, as a user or a script would. */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const cliPath = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'cli', 'index.js');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export function baton(args: string[], env: Record<string, string | undefined> = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(process.execPath, [cliPath, ...args], {
      env: { ...process.env, NO_COLOR: '1', SUPABASE_URL: '', BATON_AGENT_TOKEN: '', ...env },
      timeout: 120_000,
    }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
    });
  });
}
