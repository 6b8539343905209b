/**
 * Keeps one of the stack's processes running: when it exits on its own (a crash, kill -9, the OOM
 * killer), it is started again with backoff, and the log says so. What depends on it (PostgREST on
 * Postgres, the gateway on PostgREST) reconnects by itself, so clients and daemons ride it out.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';

export interface Supervised {
  pid: number;
  /** Settles when the process exits, whoever ended it. */
  exited: Promise<void>;
  stop(): Promise<void>;
}

export interface Supervisor {
  /** The running process's pid (a new one after each restart). */
  readonly pid: number;
  stop(): Promise<void>;
}

const firstDelayMs = 250;
const maxDelayMs = 10_000;
/** A process that ran this long before it died starts again at once: it was no crash loop. */
const healthyAfterMs = 60_000;

/**
 * Starts the process with `start` and restarts it whenever it exits while not stopped. `restarted`
 * runs after each restart (to record the new pid, say).
 */
export async function supervise(
  name: string, start: () => Promise<Supervised>, log: Logger, restarted?: (pid: number) => void,
): Promise<Supervisor> {
  let current = await start();
  let restarting: Promise<void> = Promise.resolve();
  const stopped = new AbortController();
  const stopping = () => stopped.signal.aborted;

  const watch = (proc: Supervised, startedAt: number, delayMs: number): void => {
    void proc.exited.then(() => {
      if (stopping()) return;
      restarting = restart(Date.now() - startedAt >= healthyAfterMs ? firstDelayMs : delayMs);
    });
  };
  const restart = async (delayMs: number): Promise<void> => {
    for (let delay = delayMs; !stopping(); delay = Math.min(maxDelayMs, delay * 2)) {
      log.error({ process: name, retryInMs: delay }, `${name} exited unexpectedly; starting it again`);
      await sleep(delay, undefined, { signal: stopped.signal }).catch(() => undefined);
      if (stopping()) return;
      try {
        current = await start();
      } catch (err) {
        log.error({ process: name, err }, `${name} did not start again`);
        continue;
      }
      log.info({ process: name, pid: current.pid }, `${name} is running again`);
      restarted?.(current.pid);
      watch(current, Date.now(), Math.min(maxDelayMs, delay * 2));
      return;
    }
  };
  watch(current, Date.now(), firstDelayMs);

  return {
    get pid() { return current.pid; },
    async stop() {
      stopped.abort();
      await restarting;
      await current.stop();
    },
  };
}
