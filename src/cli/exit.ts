import { BatonError, isRetryable } from '../errors.js';
import { ConfigError } from '../config.js';
import { StackError } from '../stack/paths.js';

/**
 * Exit codes: 0 success, 1 an operational refusal or failure, 2 a usage error, 3 (`stack status` only)
 * the stack is not running, 75 (EX_TEMPFAIL) the API or its database not there now, or a call the
 * database undid for now (isRetryable): nothing was decided, and the same command may be run again.
 */
export const exitCodes = { ok: 0, refused: 1, usage: 2, notRunning: 3, unavailable: 75 } as const;

export class ExitError extends Error {
  constructor(message: string, readonly exitCode: number, readonly hint?: string | null, readonly code?: string) {
    super(message);
    this.name = 'ExitError';
  }
}

export function usageError(message: string, hint?: string): ExitError {
  return new ExitError(message, exitCodes.usage, hint);
}

/** Any error as the one-line message, hint and exit code the CLI reports. */
export function toExitError(err: unknown): ExitError {
  if (err instanceof ExitError) return err;
  if (err instanceof BatonError) {
    // A task id that is malformed or ambiguous is a matter of how the command was written.
    const usage = err.code === 'INVALID_ID' || err.code === 'AMBIGUOUS_ID';
    const exitCode = usage ? exitCodes.usage : isRetryable(err) ? exitCodes.unavailable : exitCodes.refused;
    return new ExitError(err.message, exitCode, err.hint, err.code);
  }
  if (err instanceof StackError) return new ExitError(err.message, exitCodes.refused, err.hint);
  if (err instanceof ConfigError) return new ExitError(err.message, exitCodes.usage);
  const message = err instanceof Error ? err.message : String(err);
  return new ExitError(message, exitCodes.refused);
}

/**
 * Ends the process shortly after a command that listened through Realtime is done: realtime-js's
 * disconnect leaves a 10-second timer behind that would keep it alive. The exit code is the one the
 * command set by then.
 */
export function exitWhenDone(): void {
  setTimeout(() => process.exit(), 100).unref();
}
