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
  /** A server run as a subprocess speaking MCP on stdin and stdout. */
  readonly stdio: {
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
  if (settings.retry !== undefined && !RETRY.includes(settings.retry as string)) {
    return `${where}.retry must be "safe", "conditional" or "unsafe"`;
  }
  if (settings.taskSupport !== undefined && !TASK_SUPPORT.includes(settings.taskSupport as string)) {
    return `${where}.taskSupport must be "forbidden", "optional" or "required"`;
  }
  if (settings.timeouts !== undefined) {
    if (!isRecord(settings.timeouts)) return `${where}.timeouts must be an object`;
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
  if (typeof definition.prefix !== 'string' || !PREFIX.test(definition.prefix)) {
    return problem('prefix must be a string of at most 64 of A-Z a-z 0-9 _ . -');
  }
  if (definition.prefix.toLowerCase().startsWith('taskgate.')) {
    return problem("prefix must not begin taskgate.: those names are the platform's own");
  }
  const stdio = definition.stdio;
  if (!isRecord(stdio)) return problem('stdio must be an object with the command that runs the server');
  if (typeof stdio.command !== 'string' || stdio.command === '' || stdio.command.includes('\u0000')) {
    return problem('stdio.command must be a non-empty string without NUL');
  }
  if (
    stdio.args !== undefined &&
    !(Array.isArray(stdio.args) && stdio.args.every((arg) => typeof arg === 'string' && !arg.includes('\u0000')))
  ) {
    return problem('stdio.args must be an array of strings without NUL');
  }
  if (stdio.env !== undefined) {
    if (!isRecord(stdio.env)) return problem('stdio.env must be an object of strings');
    for (const [key, value] of Object.entries(stdio.env)) {
      if (typeof value !== 'string' || key === '' || key.includes('=') || `${key}${value}`.includes('\u0000')) {
        return problem(`stdio.env.${key} must be a string, under a name without = or NUL`);
      }
    }
  }
  if (stdio.cwd !== undefined && typeof stdio.cwd !== 'string') return problem('stdio.cwd must be a string');
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

/** Checks a gateway declaration at once (a TypeError naming what is wrong) and returns it. */
export function defineGateway(definition: GatewayDefinition): GatewayDefinition {
  const problem = gatewayDefinitionProblem(definition);
  if (problem !== null) throw new TypeError(problem);
  return definition;
}
