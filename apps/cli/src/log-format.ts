/**
 * Log lines for a person at a terminal: `20:21:05.123 INFO  [api] GET /v1/tasks 200 3.2 ms`.
 * The same records a JSON log holds (pino's), reformatted as they are written, so the two
 * formats cannot drift apart: what a JSON line has, the pretty line has too, as key=value.
 */

export const LOG_FORMATS = ['auto', 'json', 'pretty'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

const LEVELS: Readonly<Record<string, { readonly label: string; readonly color: string }>> = {
  trace: { label: 'TRACE', color: '90' },
  debug: { label: 'DEBUG', color: '36' },
  info: { label: 'INFO ', color: '32' },
  warn: { label: 'WARN ', color: '33' },
  error: { label: 'ERROR', color: '31' },
  fatal: { label: 'FATAL', color: '35' },
};

/** Fields every line has, shown in place (time, level, component, message) or not at all. */
const SHOWN_IN_PLACE = new Set(['time', 'level', 'msg', 'component', 'service', 'pid', 'hostname', 'http', 'err']);

/** The longest a single value is shown; a JSON log keeps it whole. */
const VALUE_LIMIT = 300;

export interface PrettyOptions {
  readonly color: boolean;
}

/** One JSON log line (pino's output) as one line for a person, plus an error's stack under it. */
export function prettyLine(json: string, options: PrettyOptions): string {
  let record: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(json);
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return `${json.trimEnd()}\n`;
    record = parsed as Record<string, unknown>;
  } catch {
    return `${json.trimEnd()}\n`;
  }
  const paint = (code: string, text: string) => (options.color ? `\u001b[${code}m${text}\u001b[0m` : text);
  const level = LEVELS[String(record.level)] ?? { label: String(record.level).toUpperCase().padEnd(5), color: '0' };
  const parts = [paint('90', clock(record.time)), paint(level.color, level.label)];
  if (typeof record.component === 'string') parts.push(paint('90', `[${record.component}]`));
  parts.push(message(record));
  for (const [key, value] of Object.entries(record)) {
    if (SHOWN_IN_PLACE.has(key) || value === undefined) continue;
    parts.push(`${paint('90', `${key}=`)}${shown(value)}`);
  }
  const error = record.err as { message?: unknown; stack?: unknown } | undefined;
  if (error !== undefined && typeof error === 'object' && error !== null) {
    parts.push(`${paint('90', 'err=')}${shown(error.message ?? error)}`);
    if (typeof error.stack === 'string' && (record.level === 'error' || record.level === 'fatal')) {
      const stack = error.stack.split('\n').slice(1, 11);
      return `${parts.join(' ')}\n${stack.map((line) => paint('90', `    ${line.trim()}`)).join('\n')}\n`;
    }
  }
  return `${parts.join(' ')}\n`;
}

/** The message; for a request line (apps/api/src/http/request-log.ts) what was asked and answered. */
function message(record: Record<string, unknown>): string {
  const http = record.http as { method?: unknown; url?: unknown; status?: unknown; ms?: unknown } | undefined;
  if (http !== undefined && typeof http === 'object' && http !== null) {
    const ms = typeof http.ms === 'number' ? `${http.ms < 10 ? http.ms.toFixed(1) : Math.round(http.ms)} ms` : '';
    return [http.method, http.url, http.status, ms].filter((part) => part !== undefined && part !== '').join(' ');
  }
  return typeof record.msg === 'string' ? record.msg : '';
}

/** HH:MM:SS.mmm of an ISO time (the day is left out: a terminal session rarely spans one). */
function clock(time: unknown): string {
  if (typeof time === 'string') {
    const match = /T(\d{2}:\d{2}:\d{2}\.\d{3})/.exec(time);
    if (match) return match[1] as string;
  }
  if (typeof time === 'number') return new Date(time).toISOString().slice(11, 23);
  return '--:--:--.---';
}

function shown(value: unknown): string {
  const text =
    typeof value === 'string'
      ? /^[\w.:/@+-]+$/.test(value)
        ? value
        : JSON.stringify(value)
      : (JSON.stringify(value) ?? String(value));
  return text.length > VALUE_LIMIT ? `${text.slice(0, VALUE_LIMIT)}…` : text;
}
