import type { LoadedConfig } from './config.ts';

export interface Io {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly cwd: string;
  readonly stdout: (line: string) => void;
  readonly stderr: (line: string) => void;
}

export interface CommandContext {
  readonly io: Io;
  /**
   * The configuration of io's environment and working directory. Read by each command when it
   * needs it, not before: a usage error answers even where the configuration is wrong. From then
   * on an error is reported as its LOG_LEVEL asks (a stack trace at debug).
   */
  loadConfig(readsAlso?: readonly string[]): LoadedConfig;
}

/**
 * One entry of the command table (command-table.ts). The file that defines it loads nothing
 * heavy: its run parses its flags and only then imports what does the work (run/*.ts), so
 * `--help` and a usage error answer without loading pg, Fastify or the MCP SDKs.
 */
export interface Command {
  readonly name: string;
  /** What follows "Usage: taskgate " on the first line of `taskgate <command> --help`. */
  readonly synopsis: string;
  /** The command's lines of the usage text, each flag with what it does. */
  readonly usage: string;
  /** Runs until stopped, and stops on signals as the usage text's last paragraph says. */
  readonly stopsOnSignals?: boolean;
  /** Resolves with the exit code; throws a TaskgateError for a usage error or a failure. */
  run(argv: readonly string[], context: CommandContext): Promise<number>;
}
