import {
  addContentWatch,
  ChannelListener,
  CONTENT_CHANGED_CHANNEL,
  contentWatchCounts,
  type Database,
  removeContentWatch,
} from '@taskgate/db';
import type { Kysely } from 'kysely';

type LogFn = (fields: Record<string, unknown>, message: string) => void;

export interface RemoteWatchesOptions {
  readonly db: Kysely<Database>;
  /** This API instance's row in `instances` (its heartbeat keeps the workers watching). */
  readonly instanceId: string;
  /** For the LISTEN connection; absent (embedded Postgres, where NOTIFY does not cross), polling only. */
  readonly listen?: { readonly connectionString: string; readonly applicationName: string };
  /** How often this instance's rows are re-read while it holds any (default 1 s). */
  readonly pollMs?: number;
  readonly logger: { readonly warn: LogFn };
}

interface Held {
  readonly tool: string;
  readonly tenantId: string;
  readonly uri: string;
  readonly listeners: Set<() => void>;
  /** The count last seen; null until the row is written (then its count is the baseline). */
  seen: bigint | null;
}

/**
 * Subscriptions to module resources this process did not load: one content_watches row per
 * (tenant, URI) while any connection here holds it, for a worker serving the module to run the
 * resource's `watch`. Changes come back as the rows' counts, read on NOTIFY and on a poll under
 * it; each increase is one notification to every connection holding the URI. A row that could not
 * be written (an outage) is written again at the next poll; one that could not be deleted stays
 * until this instance's row goes (its watch runs unheard meanwhile).
 */
export class RemoteWatches {
  readonly #options: RemoteWatchesOptions;
  readonly #held = new Map<string, Held>();
  #listener: ChannelListener | null = null;
  #timer: NodeJS.Timeout | undefined;
  #reading: Promise<void> | null = null;
  #again = false;
  #stopped = false;

  constructor(options: RemoteWatchesOptions) {
    this.#options = options;
  }

  /** Holds `uri` for `tenantId` (served by content tool `tool`) until the returned function runs. */
  watch(tool: string, tenantId: string, uri: string, changed: () => void): () => void {
    const key = `${tenantId}\n${uri}`;
    let held = this.#held.get(key);
    if (!held) {
      held = { tool, tenantId, uri, listeners: new Set(), seen: null };
      this.#held.set(key, held);
      void this.#add(held);
      this.#ensureRunning();
    }
    const listener = () => changed();
    held.listeners.add(listener);
    return () => {
      const current = this.#held.get(key);
      if (!current?.listeners.delete(listener) || current.listeners.size > 0) return;
      this.#held.delete(key);
      removeContentWatch(this.#options.db, { apiInstanceId: this.#options.instanceId, tenantId, uri }).catch(
        (error: Error) => this.#options.logger.warn({ uri, error: error.message }, 'removing a content watch failed'),
      );
      if (this.#held.size === 0) this.#idle();
    };
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#held.clear();
    this.#idle();
    await this.#reading;
  }

  async #add(held: Held): Promise<void> {
    try {
      const changes = await addContentWatch(this.#options.db, {
        apiInstanceId: this.#options.instanceId,
        tool: held.tool,
        tenantId: held.tenantId,
        uri: held.uri,
      });
      if (this.#held.get(`${held.tenantId}\n${held.uri}`) === held) held.seen = changes;
    } catch (error) {
      this.#options.logger.warn(
        { uri: held.uri, error: (error as Error).message },
        'recording a content watch failed; trying again at the next poll',
      );
    }
  }

  #ensureRunning(): void {
    if (this.#stopped) return;
    if (this.#timer === undefined) {
      this.#timer = setInterval(() => this.#readSoon(), this.#options.pollMs ?? 1_000);
      this.#timer.unref();
    }
    const listen = this.#options.listen;
    if (listen && !this.#listener) {
      this.#listener = new ChannelListener({
        connectionString: listen.connectionString,
        applicationName: listen.applicationName,
        channel: CONTENT_CHANGED_CHANNEL,
        name: 'content watch listener',
        logger: this.#options.logger,
        onNotification: () => this.#readSoon(),
        onConnected: () => this.#readSoon(),
      });
      this.#listener.start().catch((error: Error) => {
        this.#options.logger.warn({ error: error.message }, 'the content watch listener did not start; polling only');
      });
    }
  }

  #idle(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
    const listener = this.#listener;
    this.#listener = null;
    void listener?.stop();
  }

  /** One read at a time; a wake during a read makes one more after it. */
  #readSoon(): void {
    if (this.#reading) {
      this.#again = true;
      return;
    }
    this.#reading = this.#read()
      .catch((error: Error) => this.#options.logger.warn({ error: error.message }, 'reading content watches failed'))
      .finally(() => {
        this.#reading = null;
        if (this.#again && !this.#stopped) {
          this.#again = false;
          this.#readSoon();
        }
      });
  }

  async #read(): Promise<void> {
    if (this.#held.size === 0) return;
    const counts = await contentWatchCounts(this.#options.db, this.#options.instanceId);
    const found = new Set<string>();
    for (const row of counts) {
      const key = `${row.tenantId}\n${row.uri}`;
      found.add(key);
      const held = this.#held.get(key);
      if (!held) continue;
      const before = held.seen;
      held.seen = row.changes;
      if (before === null || row.changes <= before) continue;
      for (const listener of [...held.listeners]) {
        try {
          listener();
        } catch (error) {
          this.#options.logger.warn(
            { uri: row.uri, error: (error as Error).message },
            'a content watch listener failed',
          );
        }
      }
    }
    // Held here but not in the table (its write failed, or retention took it): written again.
    for (const [key, held] of this.#held) if (!found.has(key)) await this.#add(held);
  }
}
