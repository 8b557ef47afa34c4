import pino, { type Logger } from 'pino';
import type { LogLevel } from './config.ts';

export type { Logger };

/**
 * Structured JSON logs, one object per line. Written synchronously so the last lines before an
 * exit (a fatal error, the end of a shutdown) are never lost in a buffer.
 */
export function createLogger(level: LogLevel, fd: 1 | 2 = 1): Logger {
  return pino(
    {
      level,
      base: { service: 'taskgate', pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    pino.destination({ dest: fd, sync: true }),
  );
}
