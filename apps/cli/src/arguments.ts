import { type ParseArgsConfig, parseArgs } from 'node:util';
import { TaskgateError } from '@taskgate/errors';

type Options = NonNullable<ParseArgsConfig['options']>;

/**
 * node:util's parseArgs, strict, with its errors as TG_USAGE lines that say where to read more,
 * and an unknown option named with the nearest one the command takes (`--tool` → `--tools`).
 */
export function parseCommandArgs<const T extends Options>(
  command: string,
  argv: readonly string[],
  options: T,
  allowPositionals: boolean,
) {
  try {
    return parseArgs({ args: [...argv], options, strict: true, allowPositionals });
  } catch (error) {
    throw usageOf(error, command, Object.keys(options)) ?? error;
  }
}

function usageOf(error: unknown, command: string, names: readonly string[]): TaskgateError | null {
  const code = (error as { code?: unknown }).code;
  if (typeof code !== 'string' || !code.startsWith('ERR_PARSE_ARGS_')) return null;
  const help = `run taskgate ${command} --help`;
  let message = oneLine((error as Error).message);
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    // Node goes on about putting "-x" after a `--` (quoting it unbalanced) where a command takes
    // positionals; no Taskgate command takes such an argument, so its first clause is all.
    const given = /^Unknown option '([^']*)'/.exec(message)?.[1];
    if (given !== undefined) {
      const guess = nearest(given.replace(/^-+/, ''), [...names, 'help']);
      const hint = guess === null ? '' : `; did you mean --${guess}?`;
      return new TaskgateError('TG_USAGE', `unknown option ${given} for ${command}${hint} (${help})`);
    }
  }
  if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') {
    message = message.replace(/\. To specify a positional argument.*$/, '');
  }
  return new TaskgateError('TG_USAGE', `${message}; ${help}`);
}

/**
 * The candidate closest to `given` by edit distance, if close enough to be a typo: at most a third
 * of the longer name's letters (at least one), or a prefix (`--no` → `--no-worker`). Null otherwise,
 * so a wild guess is never offered.
 */
export function nearest(given: string, candidates: readonly string[]): string | null {
  let best: string | null = null;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of candidates) {
    const distance = candidate.startsWith(given) && given.length >= 2 ? 0.5 : editDistance(given, candidate);
    const limit = Math.max(1, Math.floor(Math.max(given.length, candidate.length) / 3));
    if (distance <= limit && distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/** Levenshtein distance, with a swap of two neighbours counted as one edit (`--tsate`). */
function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const columns = b.length + 1;
  const d: number[][] = Array.from({ length: rows }, (_, i) =>
    Array.from({ length: columns }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < columns; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      const row = d[i] as number[];
      const above = d[i - 1] as number[];
      row[j] = Math.min((above[j] as number) + 1, (row[j - 1] as number) + 1, (above[j - 1] as number) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        row[j] = Math.min(row[j] as number, ((d[i - 2] as number[])[j - 2] as number) + 1);
      }
    }
  }
  return (d[a.length] as number[])[b.length] as number;
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}
