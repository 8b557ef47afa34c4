import { isatty } from 'node:tty';
import pino, { type Logger } from 'pino';
import { type LogFormat, prettyLine } from './log-format.ts';
import { DEFAULTS, type LogLevel } from './settings.ts';

export type { Logger };

/**
 * Structured logs, one record per line: JSON lines, or with `pretty` (LOG_FORMAT=pretty, or
 * `auto` when `fd` is a terminal) the same records as lines for a person (log-format.ts), in
 * colour on a terminal unless NO_COLOR is set. Written synchronously so the last lines before an
 * exit (a fatal error, the end of a shutdown) are never lost in a buffer.
 */
export function createLogger(
  level: LogLevel,
  fd: 1 | 2 = 1,
  format: LogFormat = DEFAULTS.logFormat,
  env: Readonly<Record<string, string | undefined>> = process.env,
): Logger {
  const destination = pino.destination({ dest: fd, sync: true });
  const terminal = isatty(fd);
  const pretty = format === 'pretty' || (format === 'auto' && terminal);
  const color = pretty && terminal && (env.NO_COLOR ?? '') === '';
  return pino(
    {
      level,
      base: { service: 'taskgate', pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    pretty ? { write: (line: string) => destination.write(prettyLine(line, { color })) } : destination,
  );
}
