/**
 * MCP's log levels (server/utilities/logging: RFC 5424's syslog severities), least severe first.
 * A request or session at a level hears that level and everything more severe.
 */
export const LOG_LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'] as const;

export type LogLevel = (typeof LOG_LEVELS)[number];

export function isLogLevel(value: unknown): value is LogLevel {
  return typeof value === 'string' && (LOG_LEVELS as readonly string[]).includes(value);
}

/** Whether a message at `level` goes to a listener at `threshold` (null: one that asked for none). */
export function logLevelPasses(level: LogLevel, threshold: LogLevel | null | undefined): boolean {
  return threshold != null && LOG_LEVELS.indexOf(level) >= LOG_LEVELS.indexOf(threshold);
}
