#!/usr/bin/env node
/** The `baton` command: builds the command tree (program.ts); errors leave through the one exit path below. */
import { CommanderError, type Command } from 'commander';
import { exitCodes, toExitError } from './exit.js';
import { buildProgram, errorLine } from './program.js';
import { nodeTooOld } from '../package.js';
import { processSettings, tracingWanted } from '../config.js';
import { transport } from '../client/transport.js';
import { serving } from './serving.js';

/**
 * Runs the command inside the trace the OTEL_* settings ask for; a command run by a traced executor
 * (TRACEPARENT set) continues its trace. OpenTelemetry is loaded only then.
 */
async function traced(program: Command, argv: string[]): Promise<void> {
  const [{ context }, { contextOfTask, ending, startTracing, tracer }] = await Promise.all([import('@opentelemetry/api'), import('../telemetry/tracing.js')]);
  const stopTracing = await startTracing('baton');
  try {
    const asked = processSettings.parentTrace();
    const parent = asked ? contextOfTask(asked) : context.active();
    if (serving(argv)) {
      await context.with(parent, () => program.parseAsync(argv));
      return;
    }
    // A command is a span of its own, named once commander knows which (`baton handoff`): the
    // requests it makes are its children, one trace.
    await context.with(parent, () => tracer.startActiveSpan('baton', (span) => ending(span, () => {
      program.hook('preAction', (_program, command) => {
        const names: string[] = [];
        for (let c: Command | null = command; c; c = c.parent) names.unshift(c.name());
        span.updateName(names.join(' '));
      });
      return program.parseAsync(argv);
    })));
  } finally {
    await stopTracing();
  }
}

async function main(argv: string[]): Promise<number> {
  const tooOld = nodeTooOld();
  if (tooOld) {
    process.stderr.write(errorLine(argv, tooOld, null, 'NODE_VERSION'));
    return exitCodes.usage;
  }
  try {
    // A command that serves (a daemon, a server) keeps undici's pool; any other sends a request or two and exits.
    transport.oneShot = !serving(argv);
    const program = await buildProgram(argv);
    // Only what the command needs is loaded, when it runs (context.ts): `baton --version` loads none of it.
    if (tracingWanted()) await traced(program, argv);
    else await program.parseAsync(argv);
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
