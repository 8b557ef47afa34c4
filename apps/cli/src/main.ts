import { isTaskgateError, TaskgateError } from '@taskgate/errors';
import { nearest } from './arguments.ts';
import type { Command, CommandContext, Io } from './command.ts';
import { cliVersion } from './command-support.ts';
import { COMMANDS, commandNamed } from './command-table.ts';
import { DEFAULTS, type LogLevel, loadConfig } from './config.ts';
import { commandUsageText, usageText } from './usage.ts';

export type { Io } from './command.ts';

/** The commands about the CLI itself, after the table's in the usage text. */
const ABOUT = [
  { usage: '  version                     print the version (also --version, -v)' },
  { usage: "  help [COMMAND]              show this text, or one command's (also COMMAND --help, -h)" },
];

export const USAGE = usageText([...COMMANDS, ...ABOUT]);

/** `taskgate <command> --help`: that command's lines of the usage text. */
export function commandUsage(name: string): string {
  const command = commandNamed(name);
  if (command === undefined) {
    throw new TaskgateError(
      'TG_USAGE',
      `help knows no command ${JSON.stringify(name)}; run taskgate help for the list`,
    );
  }
  return commandUsageText(command);
}

/**
 * `--help` or `-h` among a command's arguments (before a `--`, after which nothing is an option),
 * wherever it stands: `migrate up --help` asks for help as much as `migrate --help` does.
 */
function asksForHelp(args: readonly string[]): boolean {
  const end = args.indexOf('--');
  return (end < 0 ? args : args.slice(0, end)).some((arg) => arg === '--help' || arg === '-h');
}

/** Runs one CLI invocation and resolves with the process exit code; never throws. */
export async function main(argv: readonly string[], io: Io): Promise<number> {
  // Until a command reads the configuration, errors are reported at the default level.
  let logLevel: LogLevel = DEFAULTS.logLevel;
  const context: CommandContext = {
    io,
    loadConfig: (readsAlso) => {
      const loaded = loadConfig(io.env, io.cwd, readsAlso);
      logLevel = loaded.config.logLevel;
      return loaded;
    },
  };
  try {
    const [name, ...rest] = argv;
    if (name === undefined) {
      io.stdout(USAGE);
      return 64;
    }
    if (name === 'help' || name === '--help' || name === '-h') {
      const topic = name === 'help' ? rest[0] : undefined;
      io.stdout(topic === undefined ? USAGE : commandUsage(topic));
      return 0;
    }
    if (name === 'version' || name === '--version' || name === '-v') {
      io.stdout(`taskgate ${await cliVersion()}`);
      return 0;
    }
    const command: Command | undefined = commandNamed(name);
    if (command === undefined) throw unknownCommand(name);
    if (asksForHelp(rest)) {
      io.stdout(commandUsageText(command));
      return 0;
    }
    return await command.run(rest, context);
  } catch (error) {
    return report(await asOutage(error), logLevel, io);
  }
}

function unknownCommand(name: string): TaskgateError {
  const guess = nearest(name, [...COMMANDS.map((command) => command.name), 'help', 'version']);
  return new TaskgateError(
    'TG_USAGE',
    `unknown command ${JSON.stringify(name)}${guess === null ? '' : `; did you mean ${guess}?`} (run taskgate help)`,
  );
}

/**
 * A database that went away during start-up (a restart, a backend terminated, no free connection)
 * is TG_DB_UNREACHABLE (exit 69, "try again"), not an internal error, wherever it surfaced. Loaded
 * only when something failed, so usage errors still answer without loading the database code.
 */
async function asOutage(error: unknown): Promise<unknown> {
  if (isTaskgateError(error)) return error;
  const { isDatabaseUnavailable } = await import('@taskgate/db');
  if (!isDatabaseUnavailable(error)) return error;
  return new TaskgateError(
    'TG_DB_UNREACHABLE',
    `the database became unreachable while starting: ${error instanceof Error ? error.message : String(error)}`,
    { cause: error },
  );
}

/** One line on stderr naming the problem and its code; a stack trace only at debug level. */
function report(error: unknown, logLevel: LogLevel, io: Io): number {
  if (isTaskgateError(error)) {
    io.stderr(`taskgate: ${error.message} [${error.code}]`);
    return error.definition.exitCode;
  }
  const internal = new TaskgateError('TG_INTERNAL', error instanceof Error ? error.message : String(error));
  const verbose = logLevel === 'debug' || logLevel === 'trace';
  io.stderr(
    `taskgate: internal error: ${oneLine(internal.message)} [${internal.code}]${verbose ? '' : ' (LOG_LEVEL=debug shows the stack)'}`,
  );
  if (verbose && error instanceof Error && error.stack) io.stderr(error.stack);
  return internal.definition.exitCode;
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}
