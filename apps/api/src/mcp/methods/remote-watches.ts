import {
  addContentWatch,
  ChannelListener,
  CONTENT_CHANGED_CHANNEL,
  contentWatchCounts,
  type Database,
  pairKey,
  removeContentWatch,
  SerialRead,
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
  /** The content tool serving the URI now (retool() moves it when a deploy renames it). */
  tool: string;
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
 * it; each increase is one notification to every connection holding the URI.
 *
 * The table is kept equal to what is held, one key at a time: every write of a key (subscribe,
 * unsubscribe, retool, a poll's repair) runs after the one before it and decides from what is held
 * when it runs, so a subscribe and a quick unsubscribe cannot land in the wrong order and leave a
 * row behind. The poll repairs every way — a held key without its row (a write lost to an outage)
 * or with another tool in it (a retool's write lost) is written, a row nothing holds (a delete
 * lost) is deleted — and keeps running until the table
 * holds nothing of this instance.
 */
export class RemoteWatches {
  readonly #options: RemoteWatchesOptions;
  readonly #held = new Map<string, Held>();
  /** Keys whose write runs now; a key asked for again meanwhile is written once more after it. */
  readonly #writing = new Map<string, Promise<void>>();
  readonly #again = new Set<string>();
  readonly #reads: SerialRead;
  #listener: ChannelListener | null = null;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(options: RemoteWatchesOptions) {
    this.#options = options;
    this.#reads = new SerialRead(
      () => this.#read(),
      (error) => options.logger.warn({ error: error.message }, 'reading content watches failed'),
    );
  }

  /** Holds `uri` for `tenantId` (served by content tool `tool`) until the returned function runs. */
  watch(tool: string, tenantId: string, uri: string, changed: () => void): () => void {
    const key = pairKey(tenantId, uri);
    let held = this.#held.get(key);
    if (!held) {
      held = { tool, tenantId, uri, listeners: new Set(), seen: null };
      this.#held.set(key, held);
      this.#write(key, tenantId, uri);
      this.#ensureRunning();
    } else if (held.tool !== tool) {
      held.tool = tool;
      this.#write(key, tenantId, uri);
    }
    const listener = () => changed();
    held.listeners.add(listener);
    return () => {
      const current = this.#held.get(key);
      if (!current?.listeners.delete(listener) || current.listeners.size > 0) return;
      this.#held.delete(key);
      this.#write(key, tenantId, uri);
    };
  }

  /**
   * The catalog moved: each held URI is moved to the content tool that serves it now (`toolOf`;
   * undefined keeps it where it is), so the workers of a new module version watch it and the
   * subscription does not go silent when the old version's workers stop.
   */
  retool(toolOf: (tenantId: string, uri: string) => string | undefined): void {
    for (const [key, held] of this.#held) {
      const tool = toolOf(held.tenantId, held.uri);
      if (tool === undefined || tool === held.tool) continue;
      held.tool = tool;
      this.#write(key, held.tenantId, held.uri);
    }
  }

  /** Resolves once no write of any key runs (for tests: the table then matches what is held). */
  async settled(): Promise<void> {
    while (this.#writing.size > 0) await Promise.allSettled([...this.#writing.values()]);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#held.clear();
    this.#idle();
    // This instance's row is marked stopped next: workers stop watching its rows, which go with it.
    await Promise.allSettled([this.#reads.stop(), ...this.#writing.values()]);
  }

  /** Makes the key's row match what is held, after any write of it already running. */
  #write(key: string, tenantId: string, uri: string): void {
    if (this.#writing.has(key)) {
      this.#again.add(key);
      return;
    }
    const run = async () => {
      do {
        this.#again.delete(key);
        if (this.#stopped) return;
        const held = this.#held.get(key);
        try {
          if (held) {
            const changes = await addContentWatch(this.#options.db, {
              apiInstanceId: this.#options.instanceId,
              tool: held.tool,
              tenantId,
              uri,
            });
            if (this.#held.get(key) === held && held.seen === null) held.seen = changes;
          } else {
            await removeContentWatch(this.#options.db, { apiInstanceId: this.#options.instanceId, tenantId, uri });
          }
        } catch (error) {
          this.#options.logger.warn(
            { uri, error: (error as Error).message },
            held
              ? 'recording a content watch failed; trying again at the next poll'
              : 'removing a content watch failed; trying again at the next poll',
          );
        }
      } while (this.#again.has(key));
    };
    this.#writing.set(
      key,
      run().finally(() => this.#writing.delete(key)),
    );
  }

  #ensureRunning(): void {
    if (this.#stopped) return;
    if (this.#timer === undefined) {
      this.#timer = setInterval(() => this.#reads.wake(), this.#options.pollMs ?? 1_000);
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
        // A change of a URI this process does not hold is some other instance's: not worth a read.
        onNotification: (payload) => {
          if (payload === undefined || this.#holds(payload)) this.#reads.wake();
        },
        onConnected: () => this.#reads.wake(),
      });
      this.#listener.start().catch((error: Error) => {
        this.#options.logger.warn({ error: error.message }, 'the content watch listener did not start; polling only');
      });
    }
  }

  #holds(payload: string): boolean {
    try {
      const { tenantId, uri } = JSON.parse(payload) as { tenantId?: unknown; uri?: unknown };
      return typeof tenantId !== 'string' || typeof uri !== 'string' || this.#held.has(pairKey(tenantId, uri));
    } catch {
      return true;
    }
  }

  #idle(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
    const listener = this.#listener;
    this.#listener = null;
    void listener?.stop();
  }

  async #read(): Promise<void> {
    const counts = await contentWatchCounts(this.#options.db, this.#options.instanceId);
    if (this.#stopped) return;
    const found = new Set<string>();
    for (const row of counts) {
      const key = pairKey(row.tenantId, row.uri);
      found.add(key);
      const held = this.#held.get(key);
      // A row nothing here holds: its delete was lost, or is on its way (the write decides).
      if (!held) {
        if (!this.#writing.has(key)) this.#write(key, row.tenantId, row.uri);
        continue;
      }
      // Served by another tool than the table says (a retool's write failed): written again.
      if (row.tool !== held.tool && !this.#writing.has(key)) this.#write(key, held.tenantId, held.uri);
      const before = held.seen;
      if (before === null) {
        // Not written yet by this holder (its write is on its way): no baseline to compare with.
        // With no write running, its write committed but its answer was lost: this is the baseline.
        if (!this.#writing.has(key)) held.seen = row.changes;
        continue;
      }
      held.seen = row.changes;
      if (row.changes <= before) continue;
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
    for (const [key, held] of this.#held) {
      if (!found.has(key) && !this.#writing.has(key)) this.#write(key, held.tenantId, held.uri);
    }
    // Nothing held and nothing left to delete: the poll and the listener rest until a subscribe.
    if (this.#held.size === 0 && counts.length === 0 && this.#writing.size === 0) this.#idle();
  }
}
