/** A page's shell block run as a person runs it: bash with `-euo pipefail`, in a folder, with an environment. */
import { spawn } from 'node:child_process';

export interface BlockRun {
  code: number;
  /** Standard output and error, interleaved as they came. */
  out: string;
  stdout: string;
}

/**
 * Runs a block with bash, answered when bash exits: what a block leaves running (a stack, daemons) may
 * hold its output pipes, and waiting for those to close would wait for them.
 */
export function runBlock(script: string, env: NodeJS.ProcessEnv, cwd: string): Promise<BlockRun> {
  return new Promise((resolve) => {
    const child = spawn('bash', ['-euo', 'pipefail', '-c', script], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let out = '';
    child.stdout.on('data', (c: Buffer) => { stdout += c; out += c; });
    child.stderr.on('data', (c: Buffer) => { out += c; });
    child.on('exit', (code) => setImmediate(() => resolve({ code: code ?? 1, out, stdout })));
  });
}
