#!/usr/bin/env node
/** The `baton` command: builds the command tree (program.ts); errors leave through the one exit path below. */
import { CommanderError } from 'commander';
import { context } from '@opentelemetry/api';
import { exitCodes, toExitError } from './exit.js';
import { buildProgram, errorLine } from './program.js';
import { contextOfTask, startTracing } from '../telemetry/tracing.js';

async function main(argv: string[]): Promise<number> {
  try {
    // Traced when the OTEL_* settings say so; a command run by a traced executor (TRACEPARENT set)
    // continues its trace.
    const stopTracing = await startTracing('baton');
    try {
      const parent = process.env.TRACEPARENT ? contextOfTask({ traceparent: process.env.TRACEPARENT, tracestate: process.env.TRACESTATE }) : context.active();
      await context.with(parent, () => buildProgram(argv).parseAsync(argv));
    } finally {
      await stopTracing();
    }
    // A command that set its own exit code (stack status) keeps it.
    return Number(process.exitCode ?? exitCodes.ok);
  } catch (err) {
    if (err instanceof CommanderError) {
      // Commander already printed its message (or the help or version it was asked for).
      return err.exitCode === 0 ? exitCodes.ok : exitCodes.usage;
    }
    const exit = toExitError(err);
    process.stderr.write(errorLine(argv, exit.message, exit.hint, exit.code ?? null));
    return exit.exitCode;
  }
}

// A reader that stops early (baton --help | head -1) is not an error.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code !== 'EPIPE') throw err;
  process.exit(process.exitCode ?? 0);
});

process.exitCode = await main(process.argv);
