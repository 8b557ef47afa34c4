import type { Command } from './command.ts';
import { call } from './commands/call.ts';
import { keys } from './commands/keys.ts';
import { mcpStdio } from './commands/mcp-stdio.ts';
import { migrate } from './commands/migrate.ts';
import { reconcile } from './commands/reconcile.ts';
import { review } from './commands/review.ts';
import { start } from './commands/start.ts';
import { tasks } from './commands/tasks.ts';
import { tools } from './commands/tools.ts';

/** Every command `taskgate <command>` runs, in the order the usage text lists them. */
export const COMMANDS: readonly Command[] = [start, migrate, mcpStdio, call, tasks, tools, keys, review, reconcile];

export function commandNamed(name: string | undefined): Command | undefined {
  return COMMANDS.find((command) => command.name === name);
}
