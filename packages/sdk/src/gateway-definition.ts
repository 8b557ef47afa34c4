import type { RetryClass, TaskSupport, ToolTimeouts } from './tool-definition.ts';

/**
 * A downstream MCP server whose tools a module publishes as Taskgate tools (a gateway): each call
 * of one runs as a task on a worker that holds the downstream connection, with the task's
 * cancellation, clocks, progress and retry class. The downstream's tools are listed when the
 * worker starts and published as `<prefix><name>`.
 */
export interface GatewayDefinition {
  /** Names the downstream in logs, errors and metrics: 1-64 of a-z 0-9 _ -. */
  readonly name: string;
  /** Put before each downstream tool's name (e.g. `ev_`); the result must be a valid tool name. */
  readonly prefix: string;
  /** A server run as a subprocess speaking MCP on stdin and stdout (this or `http`). */
  readonly stdio?: {
    readonly command: string;
    readonly args?: readonly string[];
    /**
     * Added to a minimal environment (PATH, HOME, LANG, TMPDIR…): the worker's own variables
     * (its DATABASE_URL, its tokens) are never passed on.
     */
    readonly env?: Readonly<Record<string, string>>;
    readonly cwd?: string;
  };
  /**
   * A server reached over Streamable HTTP (this or `stdio`): 2026-07-28 when it serves that
   * revision, else the 2025 revisions' sessions.
   */
  readonly http?: {
    readonly url: string;
    /** Sent on every request (for instance an API key header the server wants). */
    readonly headers?: Readonly<Record<string, string>>;
    /** Sent as `Authorization: Bearer <token>`. */
    readonly bearerToken?: string;
  };
  /**
   * How every tool of the downstream is run, unless `tools` says otherwise. `retry` defaults to
   * `unsafe`: a downstream's annotations are hints, and nothing says a lost call is safe to repeat.
   */
  readonly defaults?: GatewayToolSettings;
  /** Per downstream tool (by its downstream name). */
  readonly tools?: Readonly<Record<string, GatewayToolSettings>>;
  /** The longest the downstream may take to start and list its tools (default 10 s). */
  readonly connectTimeoutMs?: number;
}

export interface GatewayToolSettings {
  readonly retry?: RetryClass;
  readonly timeouts?: ToolTimeouts;
  readonly taskSupport?: TaskSupport;
}

const GATEWAY_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;
const PREFIX = /^[A-Za-z0-9_.-]{0,64}$/;
const RETRY: readonly string[] = ['safe', 'conditional', 'unsafe'];
const TASK_SUPPORT: readonly string[] = ['forbidden', 'optional', 'required'];

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function settingsProblem(settings: unknown, where: string): string | null {
  if (!isRecord(settings)) return `${where} must be an object`;
  const extra = unknownKey(settings, SETTINGS_KEYS);
  if (extra !== undefined)
    return `${where} has an unknown key ${JSON.stringify(extra)} (known: retry, timeouts, taskSupport)`;
  if (settings.retry !== undefined && !RETRY.includes(settings.retry as string)) {
    return `${where}.retry must be "safe", "conditional" or "unsafe"`;
  }
  if (settings.taskSupport !== undefined && !TASK_SUPPORT.includes(settings.taskSupport as string)) {
    return `${where}.taskSupport must be "forbidden", "optional" or "required"`;
  }
  if (settings.timeouts !== undefined) {
    if (!isRecord(settings.timeouts)) return `${where}.timeouts must be an object`;
    const extraTimeout = unknownKey(settings.timeouts, TIMEOUT_KEYS);
    if (extraTimeout !== undefined)
      return `${where}.timeouts has an unknown key ${JSON.stringify(extraTimeout)} (known: idleMs, maxMs)`;
    for (const key of ['idleMs', 'maxMs'] as const) {
      const value = settings.timeouts[key];
      if (
        value !== undefined &&
        !(Number.isInteger(value) && (value as number) > 0 && (value as number) <= 2_147_483_647)
      ) {
        return `${where}.timeouts.${key} must be a positive integer of milliseconds, at most 2147483647`;
      }
    }
  }
  return null;
}

/** What is wrong with a gateway declaration, or null (checked whether or not defineGateway made it). */
export function gatewayDefinitionProblem(definition: unknown): string | null {
  if (!isRecord(definition)) return 'a gateway must be an object made with defineGateway';
  const name = definition.name;
  if (typeof name !== 'string' || !GATEWAY_NAME.test(name)) {
    return `gateway name ${JSON.stringify(name)} must be 1-64 of a-z 0-9 _ - (starting with a letter or digit)`;
  }
  const problem = (text: string) => `gateway ${name}: ${text}`;
  const extra = unknownKey(definition, GATEWAY_KEYS);
  if (extra !== undefined)
    return problem(`unknown key ${JSON.stringify(extra)} (known: ${[...GATEWAY_KEYS].join(', ')})`);
  if (typeof definition.prefix !== 'string' || !PREFIX.test(definition.prefix)) {
    return problem('prefix must be a string of at most 64 of A-Z a-z 0-9 _ . -');
  }
  if (definition.prefix.toLowerCase().startsWith('taskgate.')) {
    return problem("prefix must not begin taskgate.: those names are the platform's own");
  }
  if ((definition.stdio === undefined) === (definition.http === undefined)) {
    return problem('give exactly one of stdio (a command that runs the server) and http (its url)');
  }
  if (definition.http !== undefined) {
    const found = httpProblem(definition.http);
    if (found) return problem(found);
  } else {
    const found = stdioProblem(definition.stdio);
    if (found) return problem(found);
  }
  if (definition.defaults !== undefined) {
    const found = settingsProblem(definition.defaults, 'defaults');
    if (found) return problem(found);
  }
  if (definition.tools !== undefined) {
    if (!isRecord(definition.tools)) return problem('tools must be an object of settings by downstream tool name');
    for (const [tool, settings] of Object.entries(definition.tools)) {
      const found = settingsProblem(settings, `tools.${tool}`);
      if (found) return problem(found);
    }
  }
  const timeout = definition.connectTimeoutMs;
  if (
    timeout !== undefined &&
    !(Number.isInteger(timeout) && (timeout as number) > 0 && (timeout as number) <= 600_000)
  ) {
    return problem('connectTimeoutMs must be a positive integer of milliseconds, at most 600000');
  }
  return null;
}

/** A header's name and value as fetch would send them: a token name, a value without CR, LF or NUL. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$/;
const BAD_HEADER_VALUE = /[\r\n]/;
/** Headers the transport sets itself, or that fetch refuses: a gateway's own would break its requests. */
const RESERVED_HEADERS = new Set([
  'accept',
  'connection',
  'content-length',
  'content-type',
  'host',
  'keep-alive',
  'last-event-id',
  'mcp-method',
  'mcp-name',
  'mcp-protocol-version',
  'mcp-session-id',
  'transfer-encoding',
  'upgrade',
]);

/** Keys a declaration may have, each level: a typo (`bearer_token`) must not pass unnoticed. */
const GATEWAY_KEYS = new Set(['name', 'prefix', 'stdio', 'http', 'defaults', 'tools', 'connectTimeoutMs']);
const STDIO_KEYS = new Set(['command', 'args', 'env', 'cwd']);
const HTTP_KEYS = new Set(['url', 'headers', 'bearerToken']);
const SETTINGS_KEYS = new Set(['retry', 'timeouts', 'taskSupport']);
const TIMEOUT_KEYS = new Set(['idleMs', 'maxMs']);

function unknownKey(record: Record<string, unknown>, known: ReadonlySet<string>): string | undefined {
  return Object.keys(record).find((key) => !known.has(key));
}

function httpProblem(http: unknown): string | null {
  if (!isRecord(http)) return 'http must be an object with the url of the server';
  const extra = unknownKey(http, HTTP_KEYS);
  if (extra !== undefined) return `http has an unknown key ${JSON.stringify(extra)} (known: url, headers, bearerToken)`;
  let url: URL;
  try {
    url = new URL(String(http.url));
  } catch {
    return 'http.url must be an absolute http:// or https:// URL';
  }
  if (typeof http.url !== 'string' || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    return 'http.url must be an absolute http:// or https:// URL';
  }
  if (url.username !== '' || url.password !== '') {
    return 'http.url must not carry a user or password: use bearerToken or headers';
  }
  if (http.headers !== undefined) {
    if (!isRecord(http.headers)) return 'http.headers must be an object of strings';
    for (const [key, value] of Object.entries(http.headers)) {
      if (
        typeof value !== 'string' ||
        !HEADER_NAME.test(key) ||
        BAD_HEADER_VALUE.test(value) ||
        value.includes('\u0000') ||
        [...value].some((character) => (character.codePointAt(0) ?? 0) > 0xff)
      ) {
        return `http.headers.${key} must be a string of Latin-1 without CR, LF or NUL, under a valid header name`;
      }
      if (RESERVED_HEADERS.has(key.toLowerCase())) {
        return `http.headers.${key} is set by the transport itself and cannot be given`;
      }
    }
  }
  if (http.bearerToken !== undefined) {
    if (typeof http.bearerToken !== 'string' || !/^[\x21-\x7e]+$/.test(http.bearerToken)) {
      return 'http.bearerToken must be a non-empty string of visible ASCII';
    }
    if (isRecord(http.headers) && Object.keys(http.headers).some((key) => key.toLowerCase() === 'authorization')) {
      return 'give the token once: bearerToken or an Authorization header, not both';
    }
  }
  return null;
}

function stdioProblem(stdio: unknown): string | null {
  if (!isRecord(stdio)) return 'stdio must be an object with the command that runs the server';
  const extra = unknownKey(stdio, STDIO_KEYS);
  if (extra !== undefined) return `stdio has an unknown key ${JSON.stringify(extra)} (known: command, args, env, cwd)`;
  if (typeof stdio.command !== 'string' || stdio.command === '' || stdio.command.includes('\u0000')) {
    return 'stdio.command must be a non-empty string without NUL';
  }
  if (
    stdio.args !== undefined &&
    !(Array.isArray(stdio.args) && stdio.args.every((arg) => typeof arg === 'string' && !arg.includes('\u0000')))
  ) {
    return 'stdio.args must be an array of strings without NUL';
  }
  if (stdio.env !== undefined) {
    if (!isRecord(stdio.env)) return 'stdio.env must be an object of strings';
    for (const [key, value] of Object.entries(stdio.env)) {
      if (typeof value !== 'string' || key === '' || key.includes('=') || `${key}${value}`.includes('\u0000')) {
        return `stdio.env.${key} must be a string, under a name without = or NUL`;
      }
    }
  }
  if (stdio.cwd !== undefined && typeof stdio.cwd !== 'string') return 'stdio.cwd must be a string';
  return null;
}

/** Checks a gateway declaration at once (a TypeError naming what is wrong) and returns it. */
export function defineGateway(definition: GatewayDefinition): GatewayDefinition {
  const problem = gatewayDefinitionProblem(definition);
  if (problem !== null) throw new TypeError(problem);
  return definition;
}
