import type { OAuthSettings } from '@taskgate/api';
import type { LogFormat } from './log-format.ts';
import type { LogLevel } from './settings.ts';

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
   * TASKGATE_TOOLS: the tool modules to load when `--tools` is not given; empty: the modules the
   * project's package.json declares, none where it declares none (tool-modules.ts);
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
