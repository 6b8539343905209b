import pino, { type Logger } from 'pino';
import { processSettings } from './config.js';

export type { Logger };

/** Pretty lines for a person at a terminal, JSON lines for everything else. */
export function createLogger({ level = processSettings.logLevel('info'), pretty = process.stderr.isTTY } = {}): Logger {
  const destination = pino.destination({ fd: 2, sync: true });
  if (!pretty) return pino({ level, base: undefined }, destination);
  return pino({
    level,
    base: undefined,
    transport: { target: 'pino-pretty', options: { destination: 2, ignore: 'pid,hostname', translateTime: 'SYS:HH:MM:ss' } },
  });
}

export const silentLogger: Logger = pino({ level: 'silent' });
