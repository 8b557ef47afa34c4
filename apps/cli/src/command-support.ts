import { TaskgateError } from '@taskgate/errors';
import { type Config, NO_TOOLS, splitList } from './config.ts';

/**
 * The logger of a command that prints its own output (migrate, reconcile): stdout carries that
 * output, so logs go to stderr, and say something only when it matters (warn, unless debugging).
 */
export async function commandLogger(config: Config, warnings: readonly string[]) {
  const { createLogger } = await import('./logger.ts');
  const logger = createLogger(
    config.logLevel === 'debug' || config.logLevel === 'trace' ? config.logLevel : 'warn',
    2,
    config.logFormat,
  );
  for (const warning of warnings) logger.warn({}, warning);
  return logger;
}

/**
 * Runs a long-lived command with traces on when an OTLP endpoint is configured, and sends the
 * last spans before it returns (OpenTelemetry is loaded only then).
 */
export async function withTraces(config: Config, run: () => Promise<number>): Promise<number> {
  if (config.traces === null) return run();
  const { configureTracing } = await import('@taskgate/metrics');
  const tracing = await configureTracing(config.traces);
  try {
    return await run();
  } finally {
    await tracing.shutdown().catch(() => {});
  }
}

/** Whether stdout is a terminal, and how wide: tables fit it, and a pipe gets JSON where a command says so. */
export function stdoutTerminal(): { isTTY: boolean; columns?: number } {
  return {
    isTTY: process.stdout.isTTY === true,
    ...(process.stdout.columns ? { columns: process.stdout.columns } : {}),
  };
}

/** `--tools a.ts --tools b.ts` or `--tools a.ts,b.ts`; `--tools none` alone loads no module. */
export function toolsOption(values: readonly string[] | undefined): string[] {
  const specs = (values ?? []).flatMap((value) => splitList(value));
  if (values !== undefined && specs.length === 0)
    throw new TaskgateError('TG_USAGE', '--tools takes a module path or package name');
  if (specs.includes(NO_TOOLS) && specs.length > 1) {
    throw new TaskgateError(
      'TG_USAGE',
      `--tools ${NO_TOOLS} loads no module, so it cannot be combined with modules (a file named ${NO_TOOLS} is ./${NO_TOOLS})`,
    );
  }
  return specs;
}

/** The version of this CLI: its package's package.json, one level up from src/ or dist/. */
export async function cliVersion(): Promise<string> {
  const { readFile } = await import('node:fs/promises');
  const manifest = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8'));
  return String(manifest.version);
}
