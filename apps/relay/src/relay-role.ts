import { randomUUID } from 'node:crypto';
import { type ClaimedOutboxEvent, createKysely, createPool, OutboxListener } from '@taskgate/db';
import type { BackoffOptions } from '@taskgate/reliability';
import { requestTimeoutMs } from './delivery-schedule.ts';
import { OutboxRelay } from './outbox-relay.ts';
import { type SendResult, WebhookSink } from './webhook-sink.ts';

type LogFn = (fields: Record<string, unknown>, message: string) => void;

export interface RelayRoleOptions {
  readonly connectionString: string;
  readonly logger: { readonly info: LogFn; readonly warn: LogFn };
  /** Whether NOTIFY reaches this process (false on the embedded Postgres: poll faster instead). */
  readonly listenNotify: boolean;
  /** http(s) webhook URLs; empty: the relay idles and every outbox row stays pending. */
  readonly sinks: readonly string[];
  /** HMAC key for Taskgate-Signature; required when there are sinks. */
  readonly secret: string | null;
  readonly maxAttempts: number;
  readonly leaseMs: number;
  readonly concurrency: number;
  /** How long deliveries in flight get to finish after stop() begins. */
  readonly graceMs: number;
  readonly relayId?: string;
  /** Default: 1 s doubling to 5 min, full jitter. */
  readonly backoff?: BackoffOptions;
  readonly random?: () => number;
  readonly pollIntervalMs?: number;
  /** Unix milliseconds for signatures (tests). */
  readonly now?: () => number;
}

export interface RelayRole {
  readonly relayId: string;
  readonly relay: OutboxRelay | null;
  stop(): Promise<void>;
}

/**
 * The outbox relay role: delivers outbox rows to the configured webhooks. Several relays (in one
 * process or many) share the table safely; each holds its rows under a lease.
 */
export async function startRelayRole(options: RelayRoleOptions): Promise<RelayRole> {
  const relayId = options.relayId ?? `relay-${randomUUID().slice(0, 8)}`;
  const { logger } = options;
  if (options.sinks.length === 0) {
    logger.info(
      { relayId },
      'relay idle: no sinks configured (TASKGATE_RELAY_SINKS), so it claims nothing and outbox rows stay pending',
    );
    logger.info({ relayId, sinks: 0 }, 'relay started');
    return { relayId, relay: null, stop: async () => logger.info({ relayId }, 'relay stopped') };
  }
  if (options.secret === null) throw new Error('a relay with sinks needs a signing secret');

  const sinks = options.sinks.map(
    (url) =>
      new WebhookSink({
        url,
        secret: options.secret as string,
        timeoutMs: requestTimeoutMs(options.leaseMs),
        maxSockets: options.concurrency,
        ...(options.now ? { now: options.now } : {}),
      }),
  );
  const pool = createPool(options.connectionString, { applicationName: 'taskgate-relay', max: 4 });
  const db = createKysely(pool);
  const relay = new OutboxRelay({
    db,
    relayId,
    deliver: (event, signal) => deliverToAll(sinks, event, signal),
    concurrency: options.concurrency,
    leaseMs: options.leaseMs,
    maxAttempts: options.maxAttempts,
    pollIntervalMs: options.pollIntervalMs ?? (options.listenNotify ? 1_000 : 250),
    backoff: options.backoff ?? { baseMs: 1_000, capMs: 300_000 },
    ...(options.random ? { random: options.random } : {}),
    logger,
  });
  const listener = options.listenNotify
    ? new OutboxListener({
        connectionString: options.connectionString,
        applicationName: 'taskgate-relay-listen',
        logger,
        onWake: () => relay.wake(),
      })
    : null;
  try {
    await listener?.start();
  } catch (error) {
    await db.destroy();
    throw error;
  }
  relay.start();
  logger.info(
    { relayId, sinks: sinks.map((sink) => sink.label), concurrency: options.concurrency, leaseMs: options.leaseMs },
    'relay started',
  );
  return {
    relayId,
    relay,
    stop: async () => {
      await relay.stop(options.graceMs);
      await listener?.stop();
      for (const sink of sinks) sink.close();
      await db.destroy();
      logger.info({ relayId }, 'relay stopped');
    },
  };
}

/**
 * A row counts as delivered only when every sink accepted it; a retry sends it to all of them
 * again, so a sink that already accepted it sees it twice and must deduplicate by Idempotency-Key.
 * (Per-sink delivery state would avoid that, at the cost of a row per sink and event.)
 */
async function deliverToAll(
  sinks: readonly WebhookSink[],
  event: ClaimedOutboxEvent,
  signal: AbortSignal,
): Promise<SendResult> {
  const results = await Promise.all(sinks.map((sink) => sink.send(event, signal)));
  const errors = results.flatMap((result) => (result.ok ? [] : [result.error]));
  return errors.length === 0 ? { ok: true } : { ok: false, error: errors.join('; ') };
}
