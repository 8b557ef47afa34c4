import type { LogFormat } from './log-format.ts';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * Every default of the configuration, in one place: the parse falls back to these, the table
 * below states them, and the CLI's own defaults (the server a client command reaches) derive
 * from them.
 */
export const DEFAULTS = {
  host: '127.0.0.1',
  port: 8080,
  /** Relative to the working directory. */
  dataDir: '.taskgate',
  shutdownGraceMs: 3_000,
  workerConcurrency: 32,
  catalogWindowMs: 30_000,
  idempotencyRetentionMs: 86_400_000,
  outboxRetentionMs: 604_800_000,
  maxCallMs: 86_400_000,
  maxQueueMs: 600_000,
  mcpSseAfterMs: 1_000,
  requestTimeoutMs: 30_000,
  mcpTaskAfterMs: 500,
  relayMaxAttempts: 10,
  relayLeaseMs: 30_000,
  relayConcurrency: 64,
  logLevel: 'info' as LogLevel,
  logFormat: 'auto' as LogFormat,
  serviceName: 'taskgate',
} as const;

/** Every variable Taskgate reads, with its documentation; the README's table is checked against it. */
export const SETTINGS = {
  DATABASE_URL: 'postgres:// URL of the database; unset runs the embedded Postgres in TASKGATE_DATA_DIR',
  HOST: `interface the API binds to (default ${DEFAULTS.host})`,
  PORT: `API port, 0 picks a free one (default ${DEFAULTS.port})`,
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
  TASKGATE_DATA_DIR: `embedded Postgres data directory (default ./${DEFAULTS.dataDir})`,
  TASKGATE_ALLOWED_ORIGINS:
    'browser origins allowed to call the API, comma-separated (loopback origins are always allowed)',
  TASKGATE_SHUTDOWN_GRACE_MS: `how long in-flight work may take to stop after SIGTERM (default ${DEFAULTS.shutdownGraceMs})`,
  TASKGATE_WORKER_CONCURRENCY: `tool handlers one worker process runs at once, all tools together (default ${DEFAULTS.workerConcurrency})`,
  TASKGATE_TOOL_CONCURRENCY:
    'per-tool caps under TASKGATE_WORKER_CONCURRENCY as tool=n pairs, comma-separated, e.g. slow_compute=4,greet=16 (default: unset, each tool up to the worker-wide cap)',
  TASKGATE_CATALOG_WINDOW_MS: `how long a tool stays in tools/list and callable after the last worker serving it stopped or went silent; calls meanwhile wait in the queue up to TASKGATE_MAX_QUEUE_MS (default ${DEFAULTS.catalogWindowMs})`,
  TASKGATE_IDEMPOTENCY_RETENTION_MS: `how long an idempotency key and its stored result are kept after the call committed (default ${DEFAULTS.idempotencyRetentionMs}, 24 h)`,
  TASKGATE_OUTBOX_RETENTION_MS: `how long delivered outbox rows are kept before deletion (default ${DEFAULTS.outboxRetentionMs}, 7 days)`,
  TASKGATE_MAX_CALL_MS: `ceiling on every tool's max clock; a tool without one gets this, so every call ends (default ${DEFAULTS.maxCallMs}, 24 h)`,
  TASKGATE_MAX_IDLE_MS: "ceiling on every tool's idle clock (default: unset, tools' own idle clocks only)",
  TASKGATE_MAX_QUEUE_MS: `a task no worker has started within this long of its creation fails, naming its tool (default ${DEFAULTS.maxQueueMs}, 10 min)`,
  TASKGATE_MCP_SSE_AFTER_MS: `an MCP tools/call still running after this long is answered as an SSE stream with keepalives (default ${DEFAULTS.mcpSseAfterMs})`,
  TASKGATE_REQUEST_TIMEOUT_MS: `a request whose headers and body have not all arrived after this long is answered 408 TG_REQUEST_TIMEOUT and its connection closed, from 100 to 3600000 (default ${DEFAULTS.requestTimeoutMs})`,
  TASKGATE_TOOLS:
    'tool modules, comma-separated: paths relative to the working directory, or package names; start serves their tools and migrate applies their migrations; none loads no module (an API that offers the catalog only); --tools replaces it (default: unset, which in a checkout loads the demo modules under examples/; an installed CLI loads none)',
  TASKGATE_GATEWAYS:
    'a JSON file {"gateways": [...]} of downstream MCP servers (stdio commands or Streamable HTTP URLs) whose tools a worker publishes, as defineGateway declares them; a value written {"env": "NAME"} is read from the environment (default: unset, none)',
  TASKGATE_CONFORMANCE:
    "1 also offers confirm_delete, multi_input and test_tool_with_task, the MCP conformance suite's tools that ask for input (default: unset)",
  TASKGATE_MCP_TASK_AFTER_MS: `for a client that declared the Tasks extension, a tools/call still running after this long is answered with its task (default ${DEFAULTS.mcpTaskAfterMs})`,
  TASKGATE_RELAY_SINKS: 'webhook URLs (http or https) the relay delivers outbox events to, comma-separated',
  TASKGATE_RELAY_SECRET: 'HMAC-SHA256 key of the Taskgate-Signature header; required with sinks, 16+ characters',
  TASKGATE_RELAY_MAX_ATTEMPTS: `delivery attempts before an outbox row moves to dead-letter (default ${DEFAULTS.relayMaxAttempts})`,
  TASKGATE_RELAY_LEASE_MS: `how long a relay holds the rows it claimed (default ${DEFAULTS.relayLeaseMs})`,
  TASKGATE_RELAY_CONCURRENCY: `deliveries one relay process has in flight at once (default ${DEFAULTS.relayConcurrency})`,
  LOG_LEVEL: `one of ${LOG_LEVELS.join(', ')} (default ${DEFAULTS.logLevel})`,
  LOG_FORMAT: `json (a JSON object per line), pretty (a line for a person, one per HTTP request) or auto: pretty when the log goes to a terminal, else json (default ${DEFAULTS.logFormat})`,
  OTEL_EXPORTER_OTLP_ENDPOINT:
    'http(s) base URL of an OTLP/HTTP collector: traces go to its /v1/traces, one span per task attempt (default: unset, no traces)',
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'the full OTLP/HTTP traces URL; wins over OTEL_EXPORTER_OTLP_ENDPOINT',
  OTEL_SERVICE_NAME: `service.name of the spans (default ${DEFAULTS.serviceName})`,
} as const;

export const DEFAULT_TENANT = 'default';
/** `--tools none` / TASKGATE_TOOLS=none: load no tool module at all. */
export const NO_TOOLS = 'none';
