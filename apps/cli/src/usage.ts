import type { Command } from './command.ts';
import { DUPLICATE_SIGNAL_WINDOW_MS } from './stop-signals.ts';

const CONFIGURATION = `Configuration comes from the environment: DATABASE_URL, HOST, PORT, TASKGATE_TOKENS,
TASKGATE_DATA_DIR, TASKGATE_ALLOWED_ORIGINS, TASKGATE_SHUTDOWN_GRACE_MS, TASKGATE_WORKER_CONCURRENCY,
TASKGATE_HEALTH_PORT, TASKGATE_TOOLS, TASKGATE_TOOL_CONCURRENCY, TASKGATE_CATALOG_WINDOW_MS,
LOG_LEVEL (see README.md).`;

const SIGNALS = `SIGTERM or SIGINT stops gracefully; the same signal again within ${DUPLICATE_SIGNAL_WINDOW_MS / 1_000} s is the
same request; another signal (or the same one later) exits at once.`;

/** `taskgate --help`: every command's lines, in the table's order. */
export function usageText(commands: readonly Pick<Command, 'usage'>[]): string {
  return `Usage: taskgate <command>

Commands:
${commands.map((command) => command.usage).join('\n')}

${CONFIGURATION}

${SIGNALS}`;
}

/** `taskgate <command> --help`: that command's lines of the usage text. */
export function commandUsageText(command: Command): string {
  // Only the long-running servers stop on signals as SIGNALS says (call says its own).
  const tail = command.stopsOnSignals === true ? `\n\n${SIGNALS}` : '';
  return `Usage: taskgate ${command.synopsis}\n\n${command.usage}\n\n${CONFIGURATION}${tail}`;
}
