import net from 'node:net';
import {
  isLoopbackHost,
  parseDatabaseUrl,
  parseInteger,
  parseOrigins,
  parseRelay,
  parseToolConcurrency,
  parseTraces,
  splitList,
} from './config-fields.ts';
import { MIN_TOKEN_LENGTH, parseOperatorTokens, parseTokens } from './config-tokens.ts';
import type { Config, ConfigProblem } from './config-types.ts';
import { LOG_FORMATS, type LogFormat } from './log-format.ts';
import { parseOAuth } from './oauth-config.ts';
import { DEFAULTS, LOG_LEVELS, type LogLevel, NO_TOOLS, SETTINGS } from './settings.ts';

const HOSTNAME_PATTERN =
  /^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

/** The variables as a process has them: a name without a value is unset. */
export type Variables = Readonly<Record<string, string | undefined>>;

export type ParsedConfig =
  | {
      readonly ok: true;
      readonly config: Config;
      /** Not errors, but worth a log line (an unknown TASKGATE_* variable is usually a typo). */
      readonly warnings: readonly string[];
    }
  | { readonly ok: false; readonly problems: readonly ConfigProblem[] };

/**
 * The configuration a record of variables gives, or every problem with it, each naming its
 * variable: no I/O, so every rule is a unit test (config-parse.test.ts). Values are trimmed and an
 * empty one is unset. Paths (TASKGATE_DATA_DIR, TASKGATE_GATEWAYS) are returned as written;
 * loadConfig resolves them against the working directory. `readsAlso` names the variables the
 * command reads itself (reconcile's TASKGATE_URL and TASKGATE_TOKEN): they are not the server's
 * settings, and not "ignored" either.
 */
export function parseConfig(vars: Variables, readsAlso: readonly string[] = []): ParsedConfig {
  const problems: ConfigProblem[] = [];
  const problem = (field: string, message: string) => problems.push({ field, message });
  const value = (name: keyof typeof SETTINGS) => {
    const raw = vars[name]?.trim();
    return raw === undefined || raw === '' ? undefined : raw;
  };
  // An optional number (TASKGATE_HEALTH_PORT, TASKGATE_MAX_IDLE_MS) is read only when set: its fallback 0 is never used.
  const integer = (name: keyof typeof SETTINGS, fallback: number, min: number, max: number) =>
    parseInteger(value(name), fallback, min, max, name, problem);

  const databaseUrl = parseDatabaseUrl(value('DATABASE_URL'), problem);

  const host = value('HOST') ?? DEFAULTS.host;
  if (net.isIP(host) === 0 && !HOSTNAME_PATTERN.test(host)) {
    problem('HOST', `must be an IP address or a hostname (got ${JSON.stringify(host)})`);
  }

  const port = integer('PORT', DEFAULTS.port, 0, 65_535);
  const healthPortRaw = value('TASKGATE_HEALTH_PORT');
  const healthPort = healthPortRaw === undefined ? null : integer('TASKGATE_HEALTH_PORT', 0, 0, 65_535);
  const shutdownGraceMs = integer('TASKGATE_SHUTDOWN_GRACE_MS', DEFAULTS.shutdownGraceMs, 0, 600_000);
  const workerConcurrency = integer('TASKGATE_WORKER_CONCURRENCY', DEFAULTS.workerConcurrency, 1, 1_024);

  const toolConcurrency = parseToolConcurrency(value('TASKGATE_TOOL_CONCURRENCY'), problem);
  const catalogWindowMs = integer('TASKGATE_CATALOG_WINDOW_MS', DEFAULTS.catalogWindowMs, 0, 86_400_000);

  const idempotencyRetentionMs = integer(
    'TASKGATE_IDEMPOTENCY_RETENTION_MS',
    DEFAULTS.idempotencyRetentionMs,
    60_000,
    365 * 86_400_000,
  );

  const outboxRetentionMs = integer('TASKGATE_OUTBOX_RETENTION_MS', DEFAULTS.outboxRetentionMs, 0, 3650 * 86_400_000);

  const maxCallMs = integer('TASKGATE_MAX_CALL_MS', DEFAULTS.maxCallMs, 1_000, 30 * 86_400_000);
  const maxIdleRaw = value('TASKGATE_MAX_IDLE_MS');
  const maxIdleMs = maxIdleRaw === undefined ? null : integer('TASKGATE_MAX_IDLE_MS', 0, 100, 30 * 86_400_000);

  const maxQueueMs = integer('TASKGATE_MAX_QUEUE_MS', DEFAULTS.maxQueueMs, 1_000, 30 * 86_400_000);

  const mcpSseAfterMs = integer('TASKGATE_MCP_SSE_AFTER_MS', DEFAULTS.mcpSseAfterMs, 0, 3_600_000);

  // Not 0 (Fastify's "no limit"): a body that never finishes would hold its socket for ever.
  const requestTimeoutMs = integer('TASKGATE_REQUEST_TIMEOUT_MS', DEFAULTS.requestTimeoutMs, 100, 3_600_000);

  const mcpTaskAfterMs = integer('TASKGATE_MCP_TASK_AFTER_MS', DEFAULTS.mcpTaskAfterMs, 0, 3_600_000);

  const conformanceRaw = value('TASKGATE_CONFORMANCE');
  if (conformanceRaw !== undefined && conformanceRaw !== '1' && conformanceRaw !== '0') {
    problem('TASKGATE_CONFORMANCE', `must be 1 or 0 (got ${JSON.stringify(conformanceRaw)})`);
  }
  const conformanceTools = conformanceRaw === '1';
  const toolModules = splitList(value('TASKGATE_TOOLS') ?? '');
  const toolsRaw = value('TASKGATE_TOOLS');
  if (toolsRaw !== undefined && toolsRaw.trim() !== '' && toolModules.length === 0) {
    // "," names nothing: refused rather than read as unset, which would serve the project's default modules.
    problem('TASKGATE_TOOLS', `names no module (got ${JSON.stringify(toolsRaw)}); use none for no module`);
  }
  if (toolModules.includes(NO_TOOLS) && toolModules.length > 1) {
    problem('TASKGATE_TOOLS', `${NO_TOOLS} loads no module, so it cannot be combined with modules`);
  }

  const gatewaysRaw = value('TASKGATE_GATEWAYS');
  if (gatewaysRaw !== undefined && (gatewaysRaw.trim() === '' || gatewaysRaw.includes('\u0000'))) {
    problem('TASKGATE_GATEWAYS', 'must name a JSON file');
  }
  const gatewaysFile = gatewaysRaw === undefined ? null : gatewaysRaw.trim();

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

  const logLevelRaw = value('LOG_LEVEL')?.toLowerCase() ?? DEFAULTS.logLevel;
  const logLevel = (LOG_LEVELS as readonly string[]).includes(logLevelRaw)
    ? (logLevelRaw as LogLevel)
    : DEFAULTS.logLevel;
  if (logLevel !== logLevelRaw)
    problem('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')} (got ${JSON.stringify(logLevelRaw)})`);
  const logFormatRaw = value('LOG_FORMAT')?.toLowerCase() ?? DEFAULTS.logFormat;
  const logFormat = (LOG_FORMATS as readonly string[]).includes(logFormatRaw)
    ? (logFormatRaw as LogFormat)
    : DEFAULTS.logFormat;
  if (logFormat !== logFormatRaw)
    problem('LOG_FORMAT', `must be one of ${LOG_FORMATS.join(', ')} (got ${JSON.stringify(logFormatRaw)})`);

  const allowedOrigins = parseOrigins(value('TASKGATE_ALLOWED_ORIGINS'), problem);
  const traces = parseTraces(
    value('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'),
    value('OTEL_EXPORTER_OTLP_ENDPOINT'),
    value('OTEL_SERVICE_NAME'),
    problem,
  );
  const dataDir = value('TASKGATE_DATA_DIR') ?? DEFAULTS.dataDir;

  if (problems.length > 0) return { ok: false, problems };

  const known = new Set<string>(Object.keys(SETTINGS));
  const warnings = Object.keys(vars)
    .filter((name) => name.startsWith('TASKGATE_') && !known.has(name) && !readsAlso.includes(name))
    .map((name) => `unknown setting ${name} is ignored${suggest(name, known)}`);

  return {
    ok: true,
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
