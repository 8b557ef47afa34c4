import type { Kysely } from 'kysely';
import { isDatabaseUnavailable } from '../connection-errors.ts';
import type { Database } from '../schema.ts';
import {
  heartbeatInstance,
  type InstanceIdentity,
  markInstanceStopped,
  registerInstance,
} from './instance-registry.ts';

type LogFn = (fields: Record<string, unknown>, message: string) => void;

export interface InstanceHeartbeatOptions {
  readonly db: Kysely<Database>;
  readonly identity: InstanceIdentity;
  /** How often the heartbeat is written (default 2 s). */
  readonly intervalMs?: number;
  readonly logger: { readonly info: LogFn; readonly warn: LogFn };
  readonly now?: () => number;
  /**
   * Runs after every registration: in start() (a failure fails the start) and after a heartbeat
   * found the row gone or marked stopped and registered it again (then a failure is retried at the
   * next heartbeat until it succeeds). A worker publishes its tools here: retention that deleted
   * the row during an outage took its catalog rows with it (ON DELETE CASCADE).
   */
  readonly onRegistered?: () => Promise<void>;
}

export const DEFAULT_HEARTBEAT_INTERVAL_MS = 2_000;

/**
 * Keeps an instance's row in `instances` fresh while it runs, and marks it stopped when it stops.
 * It also tells how long the database has answered this process without a break
 * (reachableForMs): a sweeper may only call another instance lost after watching it stay silent
 * while the database was reachable, or a Postgres restart would make every instance look lost to
 * the first sweeper back.
 */
export class InstanceHeartbeat {
  readonly #options: InstanceHeartbeatOptions;
  readonly #now: () => number;
  #timer: NodeJS.Timeout | undefined;
  #beating: Promise<void> | null = null;
  /** Local time since which every database call seen answered; null while it does not. */
  #reachableSince: number | null = null;
  /** A re-registration whose onRegistered has not succeeded yet. */
  #registeredPending = false;
  #stopped = false;

  constructor(options: InstanceHeartbeatOptions) {
    this.#options = options;
    this.#now = options.now ?? (() => performance.now());
  }

  get id(): string {
    return this.#options.identity.id;
  }

  /** Registers the instance (a failure here fails the role's start) and heartbeats from then on. */
  async start(): Promise<void> {
    await registerInstance(this.#options.db, this.#options.identity);
    try {
      await this.#options.onRegistered?.();
    } catch (error) {
      // Not started: the row must not keep saying this instance runs (nor list its tools).
      await markInstanceStopped(this.#options.db, this.id).catch(() => {});
      throw error;
    }
    this.#reachableSince = this.#now();
    this.#schedule();
  }

  /** How long the database has answered without a break, in ms; 0 while it does not. */
  reachableForMs(): number {
    return this.#reachableSince === null ? 0 : this.#now() - this.#reachableSince;
  }

  /** Someone else of this process found the database unreachable: the unbroken stretch restarts. */
  noteUnavailable(): void {
    if (this.#reachableSince !== null) {
      this.#options.logger.warn({ instance: this.id }, 'the database is unreachable; retrying with backoff');
    }
    this.#reachableSince = null;
  }

  /** Writes one heartbeat now (the timer does this every interval). */
  beat(): Promise<void> {
    this.#beating ??= this.#beat().finally(() => {
      this.#beating = null;
    });
    return this.#beating;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#beating;
    try {
      await markInstanceStopped(this.#options.db, this.id);
    } catch (error) {
      // Then it is found lost once its heartbeat ages, a few seconds later.
      this.#options.logger.warn(
        { instance: this.id, error: (error as Error).message },
        'could not mark the instance stopped',
      );
    }
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      void this.beat().finally(() => this.#schedule());
    }, this.#options.intervalMs ?? DEFAULT_HEARTBEAT_INTERVAL_MS);
    this.#timer.unref();
  }

  async #beat(): Promise<void> {
    const { db, identity, logger } = this.#options;
    try {
      // Gone (retention deleted a row that aged during a long outage) or marked stopped by mistake:
      // this instance runs, so it says so again.
      if (!(await heartbeatInstance(db, identity.id))) {
        await registerInstance(db, identity);
        this.#registeredPending = this.#options.onRegistered !== undefined;
        logger.warn({ instance: identity.id }, 'the instance row was gone or marked stopped: registered it again');
      }
      if (this.#registeredPending) {
        await this.#options.onRegistered?.();
        this.#registeredPending = false;
      }
      if (this.#reachableSince === null) {
        this.#reachableSince = this.#now();
        logger.info({ instance: identity.id }, 'the database is reachable again');
      }
    } catch (error) {
      if (isDatabaseUnavailable(error)) return this.noteUnavailable();
      logger.warn({ instance: identity.id, error: (error as Error).message }, 'instance heartbeat failed');
      // Not written means not known to others: the unbroken stretch restarts all the same.
      this.#reachableSince = null;
    }
  }
}
