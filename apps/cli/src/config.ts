import net from 'node:net';
import path from 'node:path';
// Not from '@taskgate/api' itself: that loads Fastify and the whole API, and main.ts loads this
// file before mcp-stdio's front can answer `initialize` (bench/stdio-first-answer.ts).
import type { OAuthSettings } from '@taskgate/api';
import { TENANT_PATTERN } from '@taskgate/api/tenant-name';
import { TaskgateError } from '@taskgate/errors';
import { LOG_FORMATS, type LogFormat } from './log-format.ts';
import { parseOAuth } from './oauth-config.ts';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** The process configuration, validated once at start-up. */
export interface Config {
  /** null: run the embedded Postgres in dataDir. */
  readonly databaseUrl: string | null;
  readonly host: string;
  readonly port: number;
  /** Port of the /healthz and /readyz probe that `start` serves whatever its roles; null: none. */
  readonly healthPort: number | null;
  /** bearer token → tenant. Empty (and no OAuth): unauthenticated, allowed only on loopback (tenant "default"). */
  readonly tokens: ReadonlyMap<string, string>;
  /** TASKGATE_OPERATOR_TOKENS: tokens that act for any tenant they name, over REST and the console. */
  readonly operatorTokens: ReadonlySet<string>;
  /** TASKGATE_OAUTH_*: access tokens from this issuer are accepted too; null: none. */
  readonly oauth: OAuthSettings | null;
  /** TASKGATE_METRICS_TOKEN: the token /metrics asks for; null: see metrics-route.ts. */
  readonly metricsToken: string | null;
  readonly dataDir: string;
  readonly logLevel: LogLevel;
  /** LOG_FORMAT: JSON lines, lines for a person, or (auto) the latter on a terminal. */
  readonly logFormat: LogFormat;
  /** Where spans go (OTEL_EXPORTER_OTLP_*), or null: no traces. */
  readonly traces: { readonly url: string; readonly serviceName: string } | null;
  readonly allowedOrigins: readonly string[];
  readonly shutdownGraceMs: number;
  readonly workerConcurrency: number;
  /** TASKGATE_TOOL_CONCURRENCY: per tool, the most handlers one worker runs at once (under workerConcurrency). */
  readonly toolConcurrency: ReadonlyMap<string, number>;
  /** How long a tool no live worker serves stays offered (tools/list, calls) after its last sign of life. */
  readonly catalogWindowMs: number;
  /** How long an idempotency key is remembered after its call committed. */
  readonly idempotencyRetentionMs: number;
  /** How long delivered outbox rows are kept. */
  readonly outboxRetentionMs: number;
  /** The server's ceiling on every tool's max clock (a tool without one gets this). */
  readonly maxCallMs: number;
  /** The server's ceiling on every tool's idle clock; null: tools' own idle clocks only. */
  readonly maxIdleMs: number | null;
  /** An MCP tools/call still running after this long is answered as SSE. */
  readonly mcpSseAfterMs: number;
  /** A request whose headers and body have not all arrived after this long is answered 408. */
  readonly requestTimeoutMs: number;
  /** For a client with the Tasks extension, a call still running after this long becomes a task. */
  readonly mcpTaskAfterMs: number;
  /** A task no worker has started within this long of its creation fails (the queue bound). */
  readonly maxQueueMs: number;
  /** Also offer the tools that ask for input (the MCP conformance suite's fixtures). */
  readonly conformanceTools: boolean;
  /**
   * TASKGATE_TOOLS: the tool modules to load when `--tools` is not given; empty: the demo modules
   * in a checkout, none in an installed CLI (tool-modules.ts);
   * `['none']` (NO_TOOLS): none at all (an API process that offers the catalog's tools only).
   */
  readonly toolModules: readonly string[];
  /** TASKGATE_GATEWAYS: a JSON file of downstream MCP servers to publish (gateways-file.ts), or null. */
  readonly gatewaysFile: string | null;
  readonly relay: RelayConfig;
}

export interface RelayConfig {
  /** http(s) webhook URLs; empty: the relay role idles. */
  readonly sinks: readonly string[];
  /** HMAC-SHA256 key of the Taskgate-Signature header; set whenever sinks are. */
  readonly secret: string | null;
  readonly maxAttempts: number;
  readonly leaseMs: number;
  readonly concurrency: number;
}

export interface ConfigProblem {
  readonly field: string;
  readonly message: string;
}

export interface LoadedConfig {
  readonly config: Config;
  /** Not errors, but worth a log line (an unknown TASKGATE_* variable is usually a typo). */
  readonly warnings: readonly string[];
}

/** Every variable Taskgate reads, with its documentation; the README's table is checked against it. */
export const SETTINGS = {
  DATABASE_URL: 'postgres:// URL of the database; unset runs the embedded Postgres in TASKGATE_DATA_DIR',
  HOST: 'interface the API binds to (default 127.0.0.1)',
  PORT: 'API port, 0 picks a free one (default 8080)',
  TASKGATE_HEALTH_PORT:
    'port of a /healthz, /readyz and /metrics probe served by taskgate start whatever its roles, on HOST (a worker or relay alone has its /metrics there); 0 picks a free one (default: unset, no probe)',
  TASKGATE_TOKENS:
    'bearer tokens as token:tenant pairs, comma-separated; unset allows unauthenticated calls on loopback only',
  TASKGATE_OPERATOR_TOKENS:
    'bearer tokens of operators, comma-separated, 16+ characters each: an operator names the tenant it acts for on each request (header X-Taskgate-Tenant or query parameter tenant), over the REST API and the console, never /mcp; it has every scope (default: unset, no operator)',
  TASKGATE_OAUTH_ISSUER:
    'issuer URL of the OAuth 2.1 authorization server whose JWT access tokens are accepted (its metadata names the keys); with TASKGATE_OAUTH_RESOURCE (default: unset, static tokens only)',
  TASKGATE_OAUTH_RESOURCE:
    "this server's canonical URL as clients reach it, e.g. https://taskgate.example.com: the tokens' required audience and the resource of /.well-known/oauth-protected-resource",
  TASKGATE_OAUTH_TENANT_CLAIM:
    'the access-token claim whose value is the tenant; a token without it is refused (default tenant)',
  TASKGATE_METRICS_TOKEN:
    'bearer token GET /metrics asks for, 16+ characters; with OAuth an access token with the taskgate:metrics scope works too (default: unset, /metrics open only where the API is: no TASKGATE_TOKENS and no OAuth)',
  TASKGATE_DATA_DIR: 'embedded Postgres data directory (default ./.taskgate)',
  TASKGATE_ALLOWED_ORIGINS:
    'browser origins allowed to call the API, comma-separated (loopback origins are always allowed)',
  TASKGATE_SHUTDOWN_GRACE_MS: 'how long in-flight work may take to stop after SIGTERM (default 3000)',
  TASKGATE_WORKER_CONCURRENCY: 'tool handlers one worker process runs at once, all tools together (default 32)',
  TASKGATE_TOOL_CONCURRENCY:
    'per-tool caps under TASKGATE_WORKER_CONCURRENCY as tool=n pairs, comma-separated, e.g. slow_compute=4,greet=16 (default: unset, each tool up to the worker-wide cap)',
  TASKGATE_CATALOG_WINDOW_MS:
    'how long a tool stays in tools/list and callable after the last worker serving it stopped or went silent; calls meanwhile wait in the queue up to TASKGATE_MAX_QUEUE_MS (default 30000)',
  TASKGATE_IDEMPOTENCY_RETENTION_MS:
    'how long an idempotency key and its stored result are kept after the call committed (default 86400000, 24 h)',
  TASKGATE_OUTBOX_RETENTION_MS: 'how long delivered outbox rows are kept before deletion (default 604800000, 7 days)',
  TASKGATE_MAX_CALL_MS:
    "ceiling on every tool's max clock; a tool without one gets this, so every call ends (default 86400000, 24 h)",
  TASKGATE_MAX_IDLE_MS: "ceiling on every tool's idle clock (default: unset, tools' own idle clocks only)",
  TASKGATE_MAX_QUEUE_MS:
    'a task no worker has started within this long of its creation fails, naming its tool (default 600000, 10 min)',
  TASKGATE_MCP_SSE_AFTER_MS:
    'an MCP tools/call still running after this long is answered as an SSE stream with keepalives (default 1000)',
  TASKGATE_REQUEST_TIMEOUT_MS:
    'a request whose headers and body have not all arrived after this long is answered 408 TG_REQUEST_TIMEOUT and its connection closed, from 100 to 3600000 (default 30000)',
  TASKGATE_TOOLS:
    'tool modules, comma-separated: paths relative to the working directory, or package names; start serves their tools and migrate applies their migrations; none loads no module (an API that offers the catalog only); --tools replaces it (default: unset, which in a checkout loads the demo modules under examples/; an installed CLI loads none)',
  TASKGATE_GATEWAYS:
    'a JSON file {"gateways": [...]} of downstream MCP servers (stdio commands or Streamable HTTP URLs) whose tools a worker publishes, as defineGateway declares them; a value written {"env": "NAME"} is read from the environment (default: unset, none)',
  TASKGATE_CONFORMANCE:
    "1 also offers confirm_delete, multi_input and test_tool_with_task, the MCP conformance suite's tools that ask for input (default: unset)",
  TASKGATE_MCP_TASK_AFTER_MS:
    'for a client that declared the Tasks extension, a tools/call still running after this long is answered with its task (default 500)',
  TASKGATE_RELAY_SINKS: 'webhook URLs (http or https) the relay delivers outbox events to, comma-separated',
  TASKGATE_RELAY_SECRET: 'HMAC-SHA256 key of the Taskgate-Signature header; required with sinks, 16+ characters',
  TASKGATE_RELAY_MAX_ATTEMPTS: 'delivery attempts before an outbox row moves to dead-letter (default 10)',
  TASKGATE_RELAY_LEASE_MS: 'how long a relay holds the rows it claimed (default 30000)',
  TASKGATE_RELAY_CONCURRENCY: 'deliveries one relay process has in flight at once (default 64)',
  LOG_LEVEL: `one of ${LOG_LEVELS.join(', ')} (default info)`,
  LOG_FORMAT:
    'json (a JSON object per line), pretty (a line for a person, one per HTTP request) or auto: pretty when the log goes to a terminal, else json (default auto)',
  OTEL_EXPORTER_OTLP_ENDPOINT:
    'http(s) base URL of an OTLP/HTTP collector: traces go to its /v1/traces, one span per task attempt (default: unset, no traces)',
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'the full OTLP/HTTP traces URL; wins over OTEL_EXPORTER_OTLP_ENDPOINT',
  OTEL_SERVICE_NAME: 'service.name of the spans (default taskgate)',
} as const;

export const DEFAULT_TENANT = 'default';
/** `--tools none` / TASKGATE_TOOLS=none: load no tool module at all. */
export const NO_TOOLS = 'none';
const TOOL_NAME_PATTERN = /^[A-Za-z0-9_.-]{1,128}$/;
const MIN_TOKEN_LENGTH = 16;
const MIN_RELAY_SECRET_LENGTH = 16;
const HOSTNAME_PATTERN =
  /^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

type Env = Readonly<Record<string, string | undefined>>;

/**
 * Reads and validates the environment. Every problem is collected, so one run names them all;
 * the error's message is a single line and never contains a secret (tokens, passwords).
 * `readsAlso` names the variables the command reads itself (reconcile's TASKGATE_URL and
 * TASKGATE_TOKEN): they are not the server's settings, and not "ignored" either.
 */
export function loadConfig(env: Env, cwd: string, readsAlso: readonly string[] = []): LoadedConfig {
  const problems: ConfigProblem[] = [];
  const problem = (field: string, message: string) => problems.push({ field, message });
  const value = (name: keyof typeof SETTINGS) => {
    const raw = env[name]?.trim();
    return raw === undefined || raw === '' ? undefined : raw;
  };

  const databaseUrl = parseDatabaseUrl(value('DATABASE_URL'), problem);

  const host = value('HOST') ?? '127.0.0.1';
  if (net.isIP(host) === 0 && !HOSTNAME_PATTERN.test(host)) {
    problem('HOST', `must be an IP address or a hostname (got ${JSON.stringify(host)})`);
  }

  const port = parseInteger(value('PORT'), 8080, 0, 65_535, 'PORT', problem);
  const healthPortRaw = value('TASKGATE_HEALTH_PORT');
  const healthPort =
    healthPortRaw === undefined ? null : parseInteger(healthPortRaw, 0, 0, 65_535, 'TASKGATE_HEALTH_PORT', problem);
  const shutdownGraceMs = parseInteger(
    value('TASKGATE_SHUTDOWN_GRACE_MS'),
    3_000,
    0,
    600_000,
    'TASKGATE_SHUTDOWN_GRACE_MS',
    problem,
  );
  const workerConcurrency = parseInteger(
    value('TASKGATE_WORKER_CONCURRENCY'),
    32,
    1,
    1_024,
    'TASKGATE_WORKER_CONCURRENCY',
    problem,
  );

  const toolConcurrency = parseToolConcurrency(value('TASKGATE_TOOL_CONCURRENCY'), problem);
  const catalogWindowMs = parseInteger(
    value('TASKGATE_CATALOG_WINDOW_MS'),
    30_000,
    0,
    86_400_000,
    'TASKGATE_CATALOG_WINDOW_MS',
    problem,
  );

  const idempotencyRetentionMs = parseInteger(
    value('TASKGATE_IDEMPOTENCY_RETENTION_MS'),
    86_400_000,
    60_000,
    365 * 86_400_000,
    'TASKGATE_IDEMPOTENCY_RETENTION_MS',
    problem,
  );

  const outboxRetentionMs = parseInteger(
    value('TASKGATE_OUTBOX_RETENTION_MS'),
    604_800_000,
    0,
    3650 * 86_400_000,
    'TASKGATE_OUTBOX_RETENTION_MS',
    problem,
  );

  const maxCallMs = parseInteger(
    value('TASKGATE_MAX_CALL_MS'),
    86_400_000,
    1_000,
    30 * 86_400_000,
    'TASKGATE_MAX_CALL_MS',
    problem,
  );
  const maxIdleRaw = value('TASKGATE_MAX_IDLE_MS');
  const maxIdleMs =
    maxIdleRaw === undefined
      ? null
      : parseInteger(maxIdleRaw, 0, 100, 30 * 86_400_000, 'TASKGATE_MAX_IDLE_MS', problem);

  const maxQueueMs = parseInteger(
    value('TASKGATE_MAX_QUEUE_MS'),
    600_000,
    1_000,
    30 * 86_400_000,
    'TASKGATE_MAX_QUEUE_MS',
    problem,
  );

  const mcpSseAfterMs = parseInteger(
    value('TASKGATE_MCP_SSE_AFTER_MS'),
    1_000,
    0,
    3_600_000,
    'TASKGATE_MCP_SSE_AFTER_MS',
    problem,
  );

  // Not 0 (Fastify's "no limit"): a body that never finishes would hold its socket for ever.
  const requestTimeoutMs = parseInteger(
    value('TASKGATE_REQUEST_TIMEOUT_MS'),
    30_000,
    100,
    3_600_000,
    'TASKGATE_REQUEST_TIMEOUT_MS',
    problem,
  );

  const mcpTaskAfterMs = parseInteger(
    value('TASKGATE_MCP_TASK_AFTER_MS'),
    500,
    0,
    3_600_000,
    'TASKGATE_MCP_TASK_AFTER_MS',
    problem,
  );

  const conformanceRaw = value('TASKGATE_CONFORMANCE');
  if (conformanceRaw !== undefined && conformanceRaw !== '1' && conformanceRaw !== '0') {
    problem('TASKGATE_CONFORMANCE', `must be 1 or 0 (got ${JSON.stringify(conformanceRaw)})`);
  }
  const conformanceTools = conformanceRaw === '1';
  const toolModules = splitList(value('TASKGATE_TOOLS') ?? '');
  const toolsRaw = value('TASKGATE_TOOLS');
  if (toolsRaw !== undefined && toolsRaw.trim() !== '' && toolModules.length === 0) {
    // "," names nothing: refused rather than read as unset, which would serve the example modules.
    problem('TASKGATE_TOOLS', `names no module (got ${JSON.stringify(toolsRaw)}); use none for no module`);
  }
  if (toolModules.includes(NO_TOOLS) && toolModules.length > 1) {
    problem('TASKGATE_TOOLS', `${NO_TOOLS} loads no module, so it cannot be combined with modules`);
  }

  const gatewaysRaw = value('TASKGATE_GATEWAYS');
  if (gatewaysRaw !== undefined && (gatewaysRaw.trim() === '' || gatewaysRaw.includes('\u0000'))) {
    problem('TASKGATE_GATEWAYS', 'must name a JSON file');
  }
  const gatewaysFile = gatewaysRaw === undefined ? null : path.resolve(cwd, gatewaysRaw.trim());

  const relay = parseRelay(value, problem);

  const tokens = parseTokens(value('TASKGATE_TOKENS'), problem);
  const operatorTokens = parseOperatorTokens(value('TASKGATE_OPERATOR_TOKENS'), tokens, problem);
  const oauth = parseOAuth(
    value('TASKGATE_OAUTH_ISSUER'),
    value('TASKGATE_OAUTH_RESOURCE'),
    value('TASKGATE_OAUTH_TENANT_CLAIM'),
    problem,
  );
  const metricsToken = value('TASKGATE_METRICS_TOKEN') ?? null;
  if (metricsToken !== null && (metricsToken.length < MIN_TOKEN_LENGTH || /\s/.test(metricsToken))) {
    problem('TASKGATE_METRICS_TOKEN', `must be ${MIN_TOKEN_LENGTH}+ characters without spaces`);
  }
  if (metricsToken !== null && (operatorTokens.has(metricsToken) || tokens.has(metricsToken))) {
    problem('TASKGATE_METRICS_TOKEN', 'must not be one of the tokens in TASKGATE_TOKENS or TASKGATE_OPERATOR_TOKENS');
  }
  if (
    tokens.size === 0 &&
    operatorTokens.size === 0 &&
    oauth === null &&
    problems.every((p) => !p.field.startsWith('TASKGATE_OAUTH')) &&
    problems.every((p) => p.field !== 'HOST') &&
    !isLoopbackHost(host)
  ) {
    problem(
      'TASKGATE_TOKENS',
      `(or TASKGATE_OAUTH_ISSUER) must be set when HOST is not a loopback address (HOST=${host}); unauthenticated mode is loopback-only`,
    );
  }

  const logLevelRaw = value('LOG_LEVEL')?.toLowerCase() ?? 'info';
  const logLevel = (LOG_LEVELS as readonly string[]).includes(logLevelRaw) ? (logLevelRaw as LogLevel) : 'info';
  if (logLevel !== logLevelRaw)
    problem('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')} (got ${JSON.stringify(logLevelRaw)})`);
  const logFormatRaw = value('LOG_FORMAT')?.toLowerCase() ?? 'auto';
  const logFormat = (LOG_FORMATS as readonly string[]).includes(logFormatRaw) ? (logFormatRaw as LogFormat) : 'auto';
  if (logFormat !== logFormatRaw)
    problem('LOG_FORMAT', `must be one of ${LOG_FORMATS.join(', ')} (got ${JSON.stringify(logFormatRaw)})`);

  const allowedOrigins = parseOrigins(value('TASKGATE_ALLOWED_ORIGINS'), problem);
  const traces = parseTraces(
    value('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'),
    value('OTEL_EXPORTER_OTLP_ENDPOINT'),
    value('OTEL_SERVICE_NAME'),
    problem,
  );
  const dataDir = path.resolve(cwd, value('TASKGATE_DATA_DIR') ?? '.taskgate');

  if (problems.length > 0) {
    throw new TaskgateError(
      'TG_CONFIG_INVALID',
      `invalid configuration: ${problems.map((p) => `${p.field} ${p.message}`).join('; ')}`,
      { details: { problems } },
    );
  }

  const known = new Set<string>(Object.keys(SETTINGS));
  const warnings = Object.keys(env)
    .filter((name) => name.startsWith('TASKGATE_') && !known.has(name) && !readsAlso.includes(name))
    .map((name) => `unknown setting ${name} is ignored${suggest(name, known)}`);

  return {
    config: {
      databaseUrl,
      host,
      port,
      healthPort,
      tokens,
      operatorTokens,
      oauth,
      metricsToken,
      dataDir,
      logLevel,
      logFormat,
      traces,
      allowedOrigins,
      shutdownGraceMs,
      workerConcurrency,
      toolConcurrency,
      catalogWindowMs,
      idempotencyRetentionMs,
      outboxRetentionMs,
      maxCallMs,
      maxIdleMs,
      mcpSseAfterMs,
      requestTimeoutMs,
      mcpTaskAfterMs,
      maxQueueMs,
      conformanceTools,
      toolModules,
      gatewaysFile,
      relay,
    },
    warnings,
  };
}

/** A comma-separated list without its blanks: `a, b,,` is `a` and `b`. */
export function splitList(raw: string | undefined): string[] {
  return (raw ?? '')
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '');
}

export function isLoopbackHost(host: string): boolean {
  if (host === 'localhost') return true;
  if (net.isIPv4(host)) return host.startsWith('127.');
  return host === '::1';
}

/** The OTLP/HTTP traces URL (the per-signal one as given, the base one with /v1/traces). */
function parseTraces(
  tracesRaw: string | undefined,
  baseRaw: string | undefined,
  serviceName: string | undefined,
  problem: (field: string, message: string) => void,
): { url: string; serviceName: string } | null {
  const field = tracesRaw !== undefined ? 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' : 'OTEL_EXPORTER_OTLP_ENDPOINT';
  const raw = tracesRaw ?? baseRaw;
  if (raw === undefined) return null;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    problem(field, 'is not a valid URL (expected http://collector:4318)');
    return null;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    problem(field, `must be an http or https URL (got ${url.protocol}//): traces are sent over OTLP/HTTP`);
    return null;
  }
  return {
    url: tracesRaw !== undefined ? raw : `${raw.replace(/\/+$/, '')}/v1/traces`,
    serviceName: serviceName ?? 'taskgate',
  };
}

function parseDatabaseUrl(raw: string | undefined, problem: (field: string, message: string) => void): string | null {
  if (raw === undefined) return null;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    problem('DATABASE_URL', 'is not a valid URL (expected postgres://user:password@host:5432/database)');
    return null;
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    problem('DATABASE_URL', `must use the postgres:// or postgresql:// scheme (got ${url.protocol}//)`);
  } else if (url.hostname === '' && !url.searchParams.has('host')) {
    problem('DATABASE_URL', 'has no host (expected postgres://user:password@host:5432/database)');
  }
  return raw;
}

function parseInteger(
  raw: string | undefined,
  fallback: number,
  min: number,
  max: number,
  field: string,
  problem: (field: string, message: string) => void,
): number {
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    problem(field, `must be an integer from ${min} to ${max} (got ${JSON.stringify(raw)})`);
    return fallback;
  }
  return Number(raw);
}

/** `slow_compute=4,greet=16`: each tool named once, each cap from 1 to 1024. */
function parseToolConcurrency(
  raw: string | undefined,
  problem: (field: string, message: string) => void,
): Map<string, number> {
  const caps = new Map<string, number>();
  const field = 'TASKGATE_TOOL_CONCURRENCY';
  for (const [index, part] of (raw ?? '').split(',').entries()) {
    const entry = part.trim();
    if (entry === '') continue;
    const where = `entry ${index + 1} (${JSON.stringify(entry)})`;
    const separator = entry.lastIndexOf('=');
    const tool = entry.slice(0, separator).trim();
    const limit = entry.slice(separator + 1).trim();
    if (separator <= 0 || !TOOL_NAME_PATTERN.test(tool)) {
      problem(field, `${where} must look like tool=n, with a tool name of 1-128 of A-Z a-z 0-9 _ . -`);
    } else if (!/^\d+$/.test(limit) || Number(limit) < 1 || Number(limit) > 1_024) {
      problem(field, `${where} must give ${tool} a concurrency from 1 to 1024`);
    } else if (caps.has(tool)) {
      problem(field, `${where} names ${tool} again`);
    } else {
      caps.set(tool, Number(limit));
    }
  }
  return caps;
}

function parseRelay(
  value: (name: keyof typeof SETTINGS) => string | undefined,
  problem: (field: string, message: string) => void,
): RelayConfig {
  const sinks: string[] = [];
  (value('TASKGATE_RELAY_SINKS') ?? '').split(',').forEach((part, index) => {
    const entry = part.trim();
    if (entry === '') return;
    let url: URL | undefined;
    try {
      url = new URL(entry);
    } catch {
      url = undefined;
    }
    // Positions, not values, in messages: a webhook URL may carry a credential.
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
      problem('TASKGATE_RELAY_SINKS', `entry ${index + 1} is not an http:// or https:// URL`);
    } else if (sinks.includes(url.toString())) {
      problem('TASKGATE_RELAY_SINKS', `entry ${index + 1} repeats a sink already given`);
    } else {
      sinks.push(url.toString());
    }
  });
  const secret = value('TASKGATE_RELAY_SECRET') ?? null;
  if (secret !== null && secret.length < MIN_RELAY_SECRET_LENGTH) {
    problem('TASKGATE_RELAY_SECRET', `must be at least ${MIN_RELAY_SECRET_LENGTH} characters`);
  } else if (secret === null && sinks.length > 0) {
    problem('TASKGATE_RELAY_SECRET', 'must be set when TASKGATE_RELAY_SINKS is (deliveries are signed with it)');
  }
  return {
    sinks,
    secret,
    maxAttempts: parseInteger(
      value('TASKGATE_RELAY_MAX_ATTEMPTS'),
      10,
      1,
      1_000,
      'TASKGATE_RELAY_MAX_ATTEMPTS',
      problem,
    ),
    leaseMs: parseInteger(
      value('TASKGATE_RELAY_LEASE_MS'),
      30_000,
      1_000,
      3_600_000,
      'TASKGATE_RELAY_LEASE_MS',
      problem,
    ),
    concurrency: parseInteger(value('TASKGATE_RELAY_CONCURRENCY'), 64, 1, 1_024, 'TASKGATE_RELAY_CONCURRENCY', problem),
  };
}

function parseTokens(raw: string | undefined, problem: (field: string, message: string) => void): Map<string, string> {
  const tokens = new Map<string, string>();
  if (raw === undefined) return tokens;
  raw.split(',').forEach((pair, index) => {
    const entry = pair.trim();
    if (entry === '') return;
    const separator = entry.lastIndexOf(':');
    // Positions, not values, in messages: the values are secrets.
    const where = `entry ${index + 1}`;
    if (separator <= 0 || separator === entry.length - 1) {
      problem('TASKGATE_TOKENS', `${where} must look like token:tenant`);
      return;
    }
    const token = entry.slice(0, separator);
    const tenant = entry.slice(separator + 1);
    if (token.length < MIN_TOKEN_LENGTH) {
      problem('TASKGATE_TOKENS', `${where} has a token shorter than ${MIN_TOKEN_LENGTH} characters`);
    } else if (!TENANT_PATTERN.test(tenant)) {
      problem('TASKGATE_TOKENS', `${where} has an invalid tenant (letters, digits, '.', '_', '-'; at most 63)`);
    } else if (tokens.has(token)) {
      problem('TASKGATE_TOKENS', `${where} repeats a token already given`);
    } else {
      tokens.set(token, tenant);
    }
  });
  return tokens;
}

function parseOperatorTokens(
  raw: string | undefined,
  tenantTokens: ReadonlyMap<string, string>,
  problem: (field: string, message: string) => void,
): Set<string> {
  const tokens = new Set<string>();
  if (raw === undefined) return tokens;
  raw.split(',').forEach((item, index) => {
    const token = item.trim();
    if (token === '') return;
    // Positions, not values, in messages: the values are secrets.
    const where = `entry ${index + 1}`;
    if (token.length < MIN_TOKEN_LENGTH || /\s/.test(token)) {
      problem('TASKGATE_OPERATOR_TOKENS', `${where} must be ${MIN_TOKEN_LENGTH}+ characters without spaces`);
    } else if (token.includes(':')) {
      // token:tenant belongs in TASKGATE_TOKENS: an operator names its tenant per request.
      problem('TASKGATE_OPERATOR_TOKENS', `${where} has a ':' (a tenant's token:tenant goes in TASKGATE_TOKENS)`);
    } else if (tenantTokens.has(token)) {
      problem('TASKGATE_OPERATOR_TOKENS', `${where} is also a tenant's token in TASKGATE_TOKENS`);
    } else if (tokens.has(token)) {
      problem('TASKGATE_OPERATOR_TOKENS', `${where} repeats a token already given`);
    } else {
      tokens.add(token);
    }
  });
  return tokens;
}

function parseOrigins(raw: string | undefined, problem: (field: string, message: string) => void): string[] {
  if (raw === undefined) return [];
  const origins: string[] = [];
  for (const entry of raw
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)) {
    let url: URL | undefined;
    try {
      url = new URL(entry);
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.origin !== entry.replace(/\/$/, '')) {
      problem('TASKGATE_ALLOWED_ORIGINS', `${JSON.stringify(entry)} is not an origin like https://app.example.com`);
      continue;
    }
    origins.push(url.origin);
  }
  return origins;
}

function suggest(name: string, known: Set<string>): string {
  const close = [...known].find((candidate) => distance(candidate, name) <= 2);
  return close ? ` (did you mean ${close}?)` : '';
}

/** Levenshtein distance, for "did you mean" on misspelt variable names. */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    let previous = row[0] as number;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const current = row[j] as number;
      row[j] = Math.min(current + 1, (row[j - 1] as number) + 1, previous + (a[i - 1] === b[j - 1] ? 0 : 1));
      previous = current;
    }
  }
  return row[b.length] as number;
}

/** The server's clock ceilings as the task services take them. */
export function clockCaps(config: Config): { maxMs: number; idleMs?: number } {
  return { maxMs: config.maxCallMs, ...(config.maxIdleMs === null ? {} : { idleMs: config.maxIdleMs }) };
}

/** The tools this configuration offers: the built-in ones, and the conformance fixtures if asked. */
