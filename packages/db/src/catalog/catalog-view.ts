import { canonicalJson, sha256Hex } from '@taskgate/reliability';
import type { Kysely } from 'kysely';
import { ChannelListener } from '../channel-listener.ts';
import { isDatabaseUnavailable } from '../connection-errors.ts';
import type { Database } from '../schema.ts';
import { CATALOG_CHANNEL, type CatalogTool, DEFAULT_CATALOG_WINDOW_MS, listCatalog } from './tool-catalog.ts';

type LogFn = (fields: Record<string, unknown>, message: string) => void;

export interface CatalogViewOptions {
  readonly db: Kysely<Database>;
  /** How long a tool stays listed after its last server's last sign of life (default 30 s). */
  readonly windowMs?: number;
  /** How recent a heartbeat makes an instance live (default: the sweeper's 10 s). */
  readonly liveWithinMs?: number;
  /** How often the catalog is re-read (default 1 s): the only way to see a tool age out. */
  readonly pollIntervalMs?: number;
  /** LISTEN on CATALOG_CHANNEL through this database; null or absent: polling only (the embedded Postgres). */
  readonly listen?: { readonly connectionString: string; readonly applicationName: string } | null;
  readonly logger: { readonly info?: LogFn; readonly warn: LogFn };
  /** Told after every refresh (tests and metrics). */
  readonly onRefresh?: (outcome: { readonly ok: boolean; readonly changed: boolean }) => void;
}

export const DEFAULT_CATALOG_POLL_MS = 1_000;

/**
 * An API process's copy of listCatalog: re-read on a catalog NOTIFY and on every poll, served from
 * memory. `version` is a hash of the listed names and fingerprints, so it moves exactly when the
 * listing does (and is the same on every API process that sees the same catalog); liveness and
 * the served fingerprint sets are kept current in entries() without moving it. A failed refresh
 * keeps the last good view: a tool does not vanish from tools/list because the database is away.
 */
export class CatalogView {
  readonly #options: CatalogViewOptions;
  #entries: readonly CatalogTool[] = Object.freeze([]);
  #byName = new Map<string, CatalogTool>();
  /** The definitions handed out, by fingerprint: a poll does not read them again. */
  #definitions = new Map<string, Readonly<Record<string, unknown>>>();
  #listingKey = '[]';
  #detailKey = '[]';
  #version = sha256Hex('[]');
  readonly #listeners = new Set<(view: CatalogView) => void>();
  #listener: ChannelListener | null = null;
  #timer: NodeJS.Timeout | undefined;
  #inFlight: Promise<boolean> | null = null;
  #queued: Promise<boolean> | null = null;
  /** The kind of failure last logged ('unavailable' or 'error'), null while refreshes succeed. */
  #failing: 'unavailable' | 'error' | null = null;
  #started = false;
  #stopped = false;

  constructor(options: CatalogViewOptions) {
    this.#options = options;
  }

  /** The listed tools, sorted by name: a frozen array, replaced only by a refresh that changes it. */
  entries(): readonly CatalogTool[] {
    return this.#entries;
  }

  get(name: string): CatalogTool | undefined {
    return this.#byName.get(name);
  }

  get version(): string {
    return this.#version;
  }

  /** Whether the last refresh failed (the view is then the last good one). */
  get failing(): boolean {
    return this.#failing !== null;
  }

  /** Null when polling only; otherwise whether the LISTEN connection is up now. */
  get connected(): boolean | null {
    return this.#listener === null ? null : this.#listener.connected;
  }

  /**
   * Calls `listener` once after each refresh that changed the listing (names and fingerprints),
   * the read in start() included when it lists anything. Returns the unsubscribe function.
   */
  onChange(listener: (view: CatalogView) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * LISTENs first, then reads the catalog (so no change falls between the two), then polls. Rejects,
   * leaving nothing running, when either fails.
   */
  async start(): Promise<void> {
    if (this.#started || this.#stopped) throw new Error('a CatalogView starts once');
    const { listen, logger } = this.#options;
    if (listen) {
      this.#listener = new ChannelListener({
        connectionString: listen.connectionString,
        applicationName: listen.applicationName,
        channel: CATALOG_CHANNEL,
        name: 'catalog listener',
        logger,
        onNotification: () => void this.refresh(),
        // After a reconnect: what was published meanwhile went unheard.
        onConnected: () => this.#started && void this.refresh(),
      });
    }
    try {
      await this.#listener?.start();
      // Taken as the read in flight, so that a NOTIFY arriving meanwhile queues its read behind
      // this one instead of racing it (an older read applied last would hide a change until a poll).
      const initial = this.#read().then((tools) => this.#apply(tools));
      this.#inFlight = initial.then(
        () => true,
        () => false,
      );
      void this.#inFlight.finally(() => {
        this.#inFlight = null;
      });
      await initial;
    } catch (error) {
      await this.#listener?.stop();
      this.#listener = null;
      await this.#queued;
      throw error;
    }
    this.#started = true;
    this.#schedule();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#listener?.stop();
    await this.#queued;
    await this.#inFlight;
  }

  /**
   * Re-reads the catalog. Calls during a read share one more read after it, which sees whatever
   * the call was about. Resolves false when that read failed (the view is kept).
   */
  refresh(): Promise<boolean> {
    if (this.#stopped) return Promise.resolve(false);
    if (this.#inFlight === null) {
      this.#inFlight = this.#attempt().finally(() => {
        this.#inFlight = null;
      });
      return this.#inFlight;
    }
    this.#queued ??= this.#inFlight.then(() => {
      this.#queued = null;
      return this.refresh();
    });
    return this.#queued;
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      void this.refresh().finally(() => this.#schedule());
    }, this.#options.pollIntervalMs ?? DEFAULT_CATALOG_POLL_MS);
    this.#timer.unref();
  }

  #read(): Promise<CatalogTool[]> {
    return listCatalog(this.#options.db, {
      windowMs: this.#options.windowMs ?? DEFAULT_CATALOG_WINDOW_MS,
      knownDefinitions: this.#definitions,
      ...(this.#options.liveWithinMs === undefined ? {} : { liveWithinMs: this.#options.liveWithinMs }),
    });
  }

  async #attempt(): Promise<boolean> {
    const { logger, onRefresh } = this.#options;
    let changed: boolean;
    try {
      changed = this.#apply(await this.#read());
    } catch (error) {
      // Logged once per outage (and again only if the failure turns into another kind).
      const kind = isDatabaseUnavailable(error) ? 'unavailable' : 'error';
      if (this.#failing !== kind) {
        logger.warn(
          { error: (error as Error).message, tools: this.#entries.length },
          kind === 'unavailable'
            ? 'the tool catalog cannot be read: the database is unreachable; serving the last catalog read'
            : 'the tool catalog cannot be read; serving the last catalog read',
        );
      }
      this.#failing = kind;
      onRefresh?.({ ok: false, changed: false });
      return false;
    }
    if (this.#failing !== null) logger.info?.({ tools: this.#entries.length }, 'the tool catalog is read again');
    this.#failing = null;
    onRefresh?.({ ok: true, changed });
    return true;
  }

  /** Installs a fresh read; true when the listing (names and fingerprints) changed. */
  #apply(tools: CatalogTool[]): boolean {
    const listingKey = canonicalJson(tools.map((tool) => [tool.name, tool.fingerprint]));
    const detailKey = canonicalJson(tools.map((tool) => [tool.live, tool.fingerprints, tool.liveFingerprints]));
    const changed = listingKey !== this.#listingKey;
    if (!changed && detailKey === this.#detailKey) return false;
    const entries = tools.map((tool) => {
      // Frozen, since every caller of entries() shares them; a definition this view held already
      // comes back as the same (frozen) object.
      return Object.freeze({
        ...tool,
        definition: deepFreeze(tool.definition),
        fingerprints: Object.freeze(tool.fingerprints),
        liveFingerprints: Object.freeze(tool.liveFingerprints),
      });
    });
    this.#entries = Object.freeze(entries);
    this.#byName = new Map(entries.map((tool) => [tool.name, tool]));
    this.#definitions = new Map(entries.map((tool) => [tool.fingerprint, tool.definition]));
    this.#detailKey = detailKey;
    if (!changed) return false;
    this.#listingKey = listingKey;
    this.#version = sha256Hex(listingKey);
    for (const listener of this.#listeners) {
      try {
        listener(this);
      } catch (error) {
        this.#options.logger.warn({ error: (error as Error).message }, 'a catalog change listener failed');
      }
    }
    return true;
  }
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const item of Object.values(value)) deepFreeze(item);
    Object.freeze(value);
  }
  return value;
}
