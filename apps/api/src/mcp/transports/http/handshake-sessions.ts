import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import {
  completeMcpSessionElicitation,
  type Database,
  deleteMcpSession,
  findMcpSession,
  insertMcpSession,
  MAX_MCP_SESSION_URL_ELICITATIONS,
  MCP_SESSION_IDLE_MS,
  type McpSessionRecord,
  noteMcpSessionElicitations,
  type SessionSignal,
  type SessionSignals,
  setMcpSessionLogLevel,
  subscribeMcpSessionResource,
  unsubscribeMcpSessionResource,
} from '@taskgate/db';
import { type Capabilities, isLogLevel, type LogLevel, type RevisionHints } from '@taskgate/protocol';
import { ReplayLog, RequestCoordinator } from '@taskgate/reliability';
import type { Kysely } from 'kysely';
import { SseStream } from '../../../sse/sse-stream.ts';
import type { ResourceSubscriptions, SubscriptionSet } from '../../core/subscriptions.ts';
import { MAX_RESOURCE_SUBSCRIPTIONS } from '../../core/subscriptions.ts';
import { ClientRequests } from '../../dispatch/client-requests.ts';
import type { Connection } from '../../dispatch/dispatcher.ts';
import { cancelRequest } from '../../dispatch/incoming.ts';
import { primesStreams } from '../../dispatch/session-revision.ts';

/**
 * Sessions of the handshake revisions (initialize, Mcp-Session-Id), each with its negotiated revision.
 * What a session is — its tenant, revision and declared capabilities — is in a SessionStore:
 * Postgres in a deployment, so any API instance serves any session and a session outlives an API
 * restart. What lives as long as a request stays in the process that holds the request: the
 * request-id coordinator a POSTed `notifications/cancelled {requestId}` is matched in (request ids
 * are only unique per client), and the session's GET stream. A POSTed cancel or response that lands
 * elsewhere is passed on as a SessionSignal (onSignal), and closing the response stream cancels
 * wherever it lands.
 */
export interface CallScope {
  /** One terminal state per request of this scope: the POSTed cancel and the result race here. */
  readonly requests: RequestCoordinator;
  readonly controllers: Map<string, AbortController>;
  /** What the client declared at initialize; undefined without a session (nothing declared). */
  readonly clientCapabilities?: Capabilities;
  /** The revision negotiated at initialize; undefined without a session (the header says). */
  readonly revision?: string;
  /** logging/setLevel's level, as the store last said (another instance may have set it). */
  logLevel: LogLevel | null;
  /** Requests this server sent the client in this process, awaiting the responses it POSTs. */
  readonly clientRequests: ClientRequests;
}

/** Where sessions are kept beyond one process. */
export interface SessionStore {
  insert(session: McpSessionRecord): Promise<void>;
  /** The tenant's live session, or null (unknown, another tenant's, idle past its window). */
  find(id: string, tenantId: string): Promise<McpSessionRecord | null>;
  delete(id: string, tenantId: string): Promise<boolean>;
  /** logging/setLevel; false when the session is gone. */
  setLogLevel(id: string, tenantId: string, level: LogLevel): Promise<boolean>;
  /** resources/subscribe: the session's URIs after it, `'full'` at the bound, null when it is gone. */
  subscribeResource(id: string, tenantId: string, uri: string): Promise<readonly string[] | 'full' | null>;
  /** resources/unsubscribe: the session's URIs after it, null when it is gone. */
  unsubscribeResource(id: string, tenantId: string, uri: string): Promise<readonly string[] | null>;
  /** A -32042 sent the session's client these URL elicitations (kept for a later completion). */
  noteElicitations(id: string, tenantId: string, elicitationIds: readonly string[]): Promise<void>;
  /** A URL elicitation is done: the tenant's live sessions whose client was sent it, each forgetting it. */
  completeElicitation(tenantId: string, elicitationId: string): Promise<readonly string[]>;
}

/** Sessions in Postgres (mcp_sessions), shared by every API instance. */
export function databaseSessionStore(db: Kysely<Database>): SessionStore {
  return {
    insert: (session) => insertMcpSession(db, session),
    find: (id, tenantId) => findMcpSession(db, id, tenantId),
    delete: (id, tenantId) => deleteMcpSession(db, id, tenantId),
    setLogLevel: (id, tenantId, level) => setMcpSessionLogLevel(db, id, tenantId, level),
    subscribeResource: (id, tenantId, uri) => subscribeMcpSessionResource(db, id, tenantId, uri),
    unsubscribeResource: (id, tenantId, uri) => unsubscribeMcpSessionResource(db, id, tenantId, uri),
    noteElicitations: async (id, tenantId, elicitationIds) => {
      await noteMcpSessionElicitations(db, id, tenantId, elicitationIds);
    },
    completeElicitation: (tenantId, elicitationId) => completeMcpSessionElicitation(db, tenantId, elicitationId),
  };
}

/** Sessions in this process only (an API without a database to share, and unit tests). */
export function memorySessionStore(options: { idleMs?: number; max?: number; now?: () => number } = {}): SessionStore {
  const idleMs = options.idleMs ?? MCP_SESSION_IDLE_MS;
  const max = options.max ?? 10_000;
  const now = options.now ?? Date.now;
  const sessions = new Map<string, { record: McpSessionRecord; lastSeen: number }>();
  /** Each session's URL elicitations, newest last (noteElicitations). */
  const elicitations = new Map<string, string[]>();
  return {
    insert: async (record) => {
      for (const [id, entry] of sessions) if (now() - entry.lastSeen > idleMs) sessions.delete(id);
      while (sessions.size >= max) sessions.delete(sessions.keys().next().value as string);
      sessions.set(record.id, { record, lastSeen: now() });
    },
    find: async (id, tenantId) => {
      const entry = sessions.get(id);
      if (!entry || entry.record.tenantId !== tenantId || now() - entry.lastSeen > idleMs) return null;
      entry.lastSeen = now();
      return entry.record;
    },
    delete: async (id, tenantId) => {
      const entry = sessions.get(id);
      if (!entry || entry.record.tenantId !== tenantId) return false;
      sessions.delete(id);
      elicitations.delete(id);
      return true;
    },
    setLogLevel: async (id, tenantId, level) => {
      const entry = sessions.get(id);
      if (!entry || entry.record.tenantId !== tenantId) return false;
      entry.record = { ...entry.record, logLevel: level };
      return true;
    },
    subscribeResource: async (id, tenantId, uri) => {
      const entry = sessions.get(id);
      if (!entry || entry.record.tenantId !== tenantId) return null;
      const uris = entry.record.resourceSubscriptions ?? [];
      if (uris.includes(uri)) return uris;
      if (uris.length >= MAX_RESOURCE_SUBSCRIPTIONS) return 'full';
      entry.record = { ...entry.record, resourceSubscriptions: [...uris, uri] };
      return entry.record.resourceSubscriptions as readonly string[];
    },
    unsubscribeResource: async (id, tenantId, uri) => {
      const entry = sessions.get(id);
      if (!entry || entry.record.tenantId !== tenantId) return null;
      entry.record = {
        ...entry.record,
        resourceSubscriptions: (entry.record.resourceSubscriptions ?? []).filter((held) => held !== uri),
      };
      return entry.record.resourceSubscriptions as readonly string[];
    },
    noteElicitations: async (id, tenantId, elicitationIds) => {
      const entry = sessions.get(id);
      if (!entry || entry.record.tenantId !== tenantId) return;
      const given = new Set(elicitationIds);
      const held = (elicitations.get(id) ?? []).filter((elicitationId) => !given.has(elicitationId));
      elicitations.set(id, [...held, ...given].slice(-MAX_MCP_SESSION_URL_ELICITATIONS));
    },
    completeElicitation: async (tenantId, elicitationId) => {
      const found: string[] = [];
      for (const [id, held] of elicitations) {
        const entry = sessions.get(id);
        if (!entry || entry.record.tenantId !== tenantId || now() - entry.lastSeen > idleMs) continue;
        if (!held.includes(elicitationId)) continue;
        elicitations.set(
          id,
          held.filter((kept) => kept !== elicitationId),
        );
        found.push(id);
      }
      return found;
    },
  };
}

interface Local {
  readonly tenantId: string;
  lastSeen: number;
  readonly scope: CallScope;
  /** The session's GET stream in this process, if the client opened one here. */
  stream: SseStream | null;
  /**
   * What the session's GET stream sent, for a client that reconnects with Last-Event-ID: kept
   * while the stream is open and RESUME_WINDOW_MS after it closed (then null).
   */
  replay: ReplayLog<Record<string, unknown>> | null;
  /** Until when `replay` (and the watches that feed it) outlive a closed stream. */
  resumableUntil: number;
  /** Its resources/subscribe URIs, as last read from the store (or written to it) here. */
  uris: readonly string[];
  /** Which read of the store `uris` came from (#reads when it started): a later one wins. */
  urisRead: number;
  /** The watches of `uris`, while the session's GET stream is here (nowhere else to notify). */
  resources: ResourceSubscriptions | null;
  /** The URIs `resources` watches. */
  readonly watched: Set<string>;
  /** The signal-driven re-reads of the store, one after another. */
  refreshing: Promise<void>;
  /**
   * Elicitation completions for the session while no GET stream of it is here: sent on the next
   * one opened here (a client may open it late, after the -32042 that named them).
   */
  readonly pendingCompletions: Set<string>;
}

/**
 * How long a session's GET stream can be resumed after it dropped, on the instance that held it:
 * what it would have carried meanwhile is kept (and its resources still watched). The SDK's
 * clients reconnect within seconds; one that comes later, or to another instance, gets refetch
 * hints instead of a replay.
 */
export const RESUME_WINDOW_MS = 120_000;

/**
 * The keys a GET stream's messages are coalesced under: one per list kind, one per subscribed
 * resource. Its buffer and replay log hold one message per key, so nothing is dropped.
 */
export const MAX_STREAM_KEYS = 3 + MAX_RESOURCE_SUBSCRIPTIONS;

/**
 * A session's GET stream on `response`: one slot per key (a list kind, a subscribed resource), as
 * an undelivered message of a key says all that its earlier ones did, so a reader that falls
 * behind loses nothing.
 */
export function sessionStream(response: ServerResponse, keepaliveMs: number): SseStream {
  return new SseStream(response, { capacity: MAX_STREAM_KEYS, coalesce: 'by-key', keepaliveMs });
}

/** The list kinds whose list_changed a GET stream carries (the capabilities say listChanged). */
const LIST_KINDS = ['tools', 'resources', 'prompts'] as const;

/** Watches resources for a session's GET stream; its notifications go to `push`. */
export type ResourceWatches = (
  tenantId: string,
  push: (message: Record<string, unknown>) => void,
) => ResourceSubscriptions;

export class HandshakeSessions {
  readonly #store: SessionStore;
  /** This process's part of the sessions it has seen: their request scopes and GET streams. */
  readonly #local = new Map<string, Local>();
  readonly #idleMs: number;
  readonly #max: number;
  readonly #now: () => number;
  readonly #watches: ResourceWatches | undefined;
  readonly #signals: SessionSignals | undefined;
  /** Numbers each read of a session's URIs, so an older read landing late does not undo a newer. */
  #reads = 0;

  constructor(
    options: {
      store?: SessionStore;
      idleMs?: number;
      max?: number;
      now?: () => number;
      /** How a session's subscribed resources are watched here (absent: they are kept, never notified). */
      watches?: ResourceWatches;
      /** Tells the other instances that a session's subscriptions changed. */
      signals?: SessionSignals;
    } = {},
  ) {
    this.#idleMs = options.idleMs ?? MCP_SESSION_IDLE_MS;
    this.#max = options.max ?? 10_000;
    this.#now = options.now ?? Date.now;
    this.#store = options.store ?? memorySessionStore(options);
    this.#watches = options.watches;
    this.#signals = options.signals;
  }

  /** A new session for an initialize, stored before its id is handed out. */
  async open(tenantId: string, revision: string, clientCapabilities?: Capabilities): Promise<string> {
    const id = randomUUID();
    await this.#store.insert({ id, tenantId, revision, clientCapabilities: clientCapabilities ?? null });
    this.#evict();
    this.#local.set(id, newLocal(tenantId, this.#now(), newScope(clientCapabilities, revision)));
    return id;
  }

  /**
   * The session's GET stream (transports "Listening for Messages from the Server"): messages
   * unrelated to any request go there. One per session in this process, since a message goes on
   * one stream only ("Multiple Connections"): a newer GET replaces the older, which is closed.
   * False when the session is unknown, expired or another tenant's.
   *
   * The stream is resumable ("Resumability and Redelivery"): each event has an id, and a GET
   * with `lastEventId` resumes the stream that id is from — what it would have sent since is sent
   * first. A resume this process cannot answer exactly (the stream was held by another instance,
   * or before a restart, or too long ago; a malformed id) gets, instead of a replay, a fresh stream
   * that starts with a list_changed of every list and a resources/updated of every subscribed
   * resource: what the client may have missed, for it to refetch. Without `lastEventId` the GET
   * opens a new stream (nothing replayed), primed with an id where the revision has priming.
   */
  async attachStream(sessionId: string, tenantId: string, stream: SseStream, lastEventId?: string): Promise<boolean> {
    const scope = await this.scopeOf(sessionId, tenantId);
    if (scope === null) return false;
    const local = this.#local.get(sessionId);
    if (!local) return false;
    local.stream?.close();
    // Past the window the log is no longer the stream's whole story (the sweep may not have run yet).
    if (local.replay && !local.stream && this.#now() > local.resumableUntil) local.replay = null;
    const missed = lastEventId === undefined ? null : (local.replay?.after(lastEventId) ?? null);
    if (missed === null) local.replay = new ReplayLog(randomUUID(), MAX_STREAM_KEYS);
    local.stream = stream;
    stream.onClose(() => {
      if (local.stream !== stream) return;
      local.stream = null;
      local.resumableUntil = this.#now() + RESUME_WINDOW_MS;
    });
    const replay = local.replay as ReplayLog<Record<string, unknown>>;
    const primes = scope.revision !== undefined && primesStreams(scope.revision);
    if (missed !== null) {
      // Primed again with the client's own id (checked by `after`): the SDK resumes from the last
      // id seen on the connection that dropped, so one that carried none would reconnect without
      // Last-Event-ID, as a new stream, losing what was sent between that drop and the GET.
      if (primes) stream.prime(lastEventId as string);
      for (const { id, key, value } of missed) stream.push({ kind: 'replaceable', key, value: { id, data: value } });
    } else if (lastEventId !== undefined) {
      for (const kind of LIST_KINDS) {
        this.#send(local, kind, { jsonrpc: '2.0', method: `notifications/${kind}/list_changed` });
      }
      for (const uri of local.uris) {
        this.#send(local, `updated ${uri}`, {
          jsonrpc: '2.0',
          method: 'notifications/resources/updated',
          params: { uri },
        });
      }
    } else if (primes) {
      stream.prime(replay.lastId);
    }
    const pending = [...local.pendingCompletions];
    local.pendingCompletions.clear();
    for (const elicitationId of pending) this.#completed(local, elicitationId);
    this.#watch(local);
    return true;
  }

  /** Sends `message` on every GET stream of this process (replacing one of the same key still undelivered). */
  notifyStreams(message: Record<string, unknown>, key: string): void {
    for (const local of this.#local.values()) this.#send(local, key, message);
  }

  /**
   * A message for the session's GET stream: recorded for a resume while the stream is resumable,
   * and sent if it is open (replacing one of the same key still undelivered).
   */
  #send(local: Local, key: string, message: Record<string, unknown>): void {
    if (!local.replay) return;
    const id = local.replay.append(key, message);
    local.stream?.push({ kind: 'replaceable', key, value: { id, data: message } });
  }

  /**
   * The session's resources/subscribe set, for a request of it taken here: the URIs are kept in
   * the store, so the instance holding the session's GET stream watches them wherever the request
   * landed (told at once by a signal; else at the session's next request there). Null for a
   * session not held here.
   */
  subscriptionsOf(sessionId: string): SubscriptionSet | null {
    const local = this.#local.get(sessionId);
    if (!local) return null;
    const { tenantId } = local;
    const changed = (read: number, uris: readonly string[] | null) => {
      if (uris === null) return;
      this.#apply(local, read, uris);
      this.#signals?.send({ kind: 'resources', tenantId, sessionId });
    };
    return {
      has: (uri) => local.uris.includes(uri),
      subscribe: async (uri) => {
        const read = ++this.#reads;
        const after = await this.#store.subscribeResource(sessionId, tenantId, uri);
        if (after === 'full') return false;
        // Gone (deleted through another instance): nothing to watch; its next request is 404.
        changed(read, after);
        return true;
      },
      unsubscribe: async (uri) => {
        const read = ++this.#reads;
        changed(read, await this.#store.unsubscribeResource(sessionId, tenantId, uri));
      },
    };
  }

  /** Another instance changed a session's subscriptions: read them again if its stream is here. */
  #refresh(local: Local, sessionId: string): void {
    local.refreshing = local.refreshing.then(async () => {
      if (!local.replay) return;
      const read = ++this.#reads;
      try {
        const record = await this.#store.find(sessionId, local.tenantId);
        if (record) this.#apply(local, read, record.resourceSubscriptions ?? []);
      } catch {
        // The store away: the session's next request here reads them again.
      }
    });
  }

  /** `uris` as read by read number `read`, unless a later read was applied already. */
  #apply(local: Local, read: number, uris: readonly string[]): void {
    if (read < local.urisRead) return;
    local.urisRead = read;
    local.uris = uris;
    this.#watch(local);
  }

  /**
   * The watches made to match the session's URIs while its stream is here (or may be resumed
   * here), and stopped without it.
   */
  #watch(local: Local): void {
    if (!local.replay || !this.#watches) {
      unwatch(local);
      return;
    }
    local.resources ??= this.#watches(local.tenantId, (message) => {
      const uri = String((message.params as { uri?: unknown } | undefined)?.uri);
      this.#send(local, `updated ${uri}`, message);
    });
    const wanted = new Set(local.uris);
    for (const uri of local.watched) {
      if (wanted.has(uri)) continue;
      local.resources.unsubscribe(uri);
      local.watched.delete(uri);
    }
    for (const uri of wanted) {
      if (local.watched.has(uri)) continue;
      local.resources.subscribe(uri);
      local.watched.add(uri);
    }
  }

  /**
   * Ends every GET stream (the server is closing; a client reopens it elsewhere, where its resume
   * gets refetch hints). Each is told to wait a different time before it reconnects (the SSE
   * `retry:` field, 1–3 s), so a deploy's clients do not all land on the next instance at once.
   */
  closeStreams(random: () => number = Math.random): void {
    for (const local of this.#local.values()) {
      local.stream?.close(1_000 + Math.floor(random() * 2_000));
      local.replay = null;
      unwatch(local);
    }
  }

  /**
   * The session's scope in this process, or null when the id is unknown, expired, or another
   * tenant's (all 404). A session opened by another instance gets its scope here on first use.
   */
  async scopeOf(sessionId: string, tenantId: string): Promise<CallScope | null> {
    const read = ++this.#reads;
    const record = await this.#store.find(sessionId, tenantId);
    const local = this.#local.get(sessionId);
    if (!record) {
      // Deleted or expired (perhaps through another instance): its local part goes too.
      if (local && local.scope.controllers.size === 0) {
        local.stream?.close();
        unwatch(local);
        this.#local.delete(sessionId);
      }
      return null;
    }
    if (local) {
      local.lastSeen = this.#now();
      local.scope.logLevel = levelOf(record.logLevel);
      this.#apply(local, read, record.resourceSubscriptions ?? []);
      return local.scope;
    }
    this.#evict();
    const created = newLocal(tenantId, this.#now(), newScope(record.clientCapabilities ?? undefined, record.revision));
    created.scope.logLevel = levelOf(record.logLevel);
    created.uris = record.resourceSubscriptions ?? [];
    created.urisRead = read;
    this.#local.set(sessionId, created);
    return created.scope;
  }

  /**
   * A signal another instance took for a session (SessionSignals): acted on here only if this
   * process holds that session's request. A cancel goes through the request's coordinator as a
   * POSTed one landing here would; a response answers the request of the server's it names.
   * True when it found its request.
   */
  onSignal(signal: SessionSignal): boolean {
    const local = this.#local.get(signal.sessionId);
    if (!local || local.tenantId !== signal.tenantId) return false;
    if (signal.kind === 'resources') {
      this.#refresh(local, signal.sessionId);
      return local.stream !== null;
    }
    if (signal.kind === 'elicitation_complete') return this.#completed(local, signal.elicitationId);
    if (signal.kind === 'response') return local.scope.clientRequests.answer(signal.message as Record<string, unknown>);
    return cancelRequest(local.scope, signal.requestId, signal.reason ?? null).cancelled;
  }

  /**
   * The scope of a request sent without a session id: its own. Request ids are only unique per
   * client, and without a session nothing says which client a POST is from, so two clients of
   * one tenant must not share ids (or cancel each other's requests). Such a request is cancelled
   * by closing its response; a POSTed notifications/cancelled without a session reaches nothing.
   */
  requestScope(): CallScope {
    return newScope();
  }

  /**
   * A -32042 of a request of the session sent its client these URL elicitations: kept with the
   * session, so a completion (completeElicitation) knows which client to tell, whichever instance
   * it lands on. Best effort: a write that fails costs the optional notification, not the answer.
   */
  async noteElicitations(sessionId: string, tenantId: string, elicitationIds: readonly string[]): Promise<void> {
    try {
      await this.#store.noteElicitations(sessionId, tenantId, elicitationIds);
    } catch {
      // The store away: the client still retries by hand once the user is done.
    }
  }

  /**
   * A URL elicitation is done (the operator's page says so): notifications/elicitation/complete
   * to each live session of the tenant whose client was sent it in a -32042, once — on its GET
   * stream, here or on the instance that holds it (a signal), recorded for a resume like any of
   * the stream's messages. The number of sessions told; 0 when no session was sent it (or every
   * one was told already).
   */
  async completeElicitation(tenantId: string, elicitationId: string): Promise<number> {
    const sessionIds = await this.#store.completeElicitation(tenantId, elicitationId);
    for (const sessionId of sessionIds) {
      const local = this.#local.get(sessionId);
      if (local && local.tenantId === tenantId && this.#completed(local, elicitationId)) continue;
      this.#signals?.send({ kind: 'elicitation_complete', tenantId, sessionId, elicitationId });
    }
    return sessionIds.length;
  }

  /**
   * The completion on the session's GET stream, if it is (or may be resumed) here; else kept for
   * the next one opened here (false: another instance may hold it, and is signalled too — a
   * client told twice ignores the second, as it MUST an already-completed id).
   */
  #completed(local: Local, elicitationId: string): boolean {
    if (!local.replay) {
      if (local.pendingCompletions.size < MAX_PENDING_COMPLETIONS) local.pendingCompletions.add(elicitationId);
      return false;
    }
    this.#send(local, `elicitation ${elicitationId}`, {
      jsonrpc: '2.0',
      method: 'notifications/elicitation/complete',
      params: { elicitationId },
    });
    return true;
  }

  /** logging/setLevel for the session, for every instance's later requests of it. */
  async setLogLevel(sessionId: string, tenantId: string, level: LogLevel): Promise<boolean> {
    const set = await this.#store.setLogLevel(sessionId, tenantId, level);
    const local = this.#local.get(sessionId);
    if (set && local) local.scope.logLevel = level;
    return set;
  }

  /** DELETE with the session id: the client is done with it, on every instance. */
  async close(sessionId: string, tenantId: string): Promise<boolean> {
    const deleted = await this.#store.delete(sessionId, tenantId);
    const local = this.#local.get(sessionId);
    if (deleted && local) {
      local.stream?.close();
      unwatch(local);
      this.#local.delete(sessionId);
    }
    return deleted;
  }

  /**
   * Lets go of this process's part of sessions idle here: run on a timer by the route, since a
   * client that vanishes without DELETE sends nothing that would, and its resource subscriptions
   * (content watch rows a worker keeps watching) would stay until the next session opened here.
   */
  sweep(): void {
    const now = this.#now();
    for (const local of this.#local.values()) {
      if (local.replay && !local.stream && now > local.resumableUntil) {
        local.replay = null;
        this.#watch(local);
      }
    }
    this.#evict(false);
  }

  /**
   * The session's scope as this process holds it, without asking the store: for a POSTed cancel
   * or response while the store is unreachable, which can still reach a request running here.
   */
  heldScope(sessionId: string, tenantId: string): CallScope | null {
    const local = this.#local.get(sessionId);
    return local && local.tenantId === tenantId ? local.scope : null;
  }

  /** The idle window: how often the route sweeps is derived from it. */
  get idleMs(): number {
    return this.#idleMs;
  }

  /**
   * This process's part of sessions idle here is let go; with `makeRoom` (a session is about to be
   * added), so are the oldest beyond the bound — never one with a request running here (its
   * cancel and its client's answers must still find it), so the bound may be passed while every
   * session held is busy. The timer's sweep only lets idle ones go: a full map is no reason to
   * drop a live session when none is being added.
   */
  #evict(makeRoom = true): void {
    const now = this.#now();
    for (const [id, local] of this.#local) {
      if (now - local.lastSeen > this.#idleMs && local.scope.controllers.size === 0 && !local.stream) {
        unwatch(local);
        this.#local.delete(id);
      }
    }
    if (!makeRoom) return;
    for (const [id, local] of this.#local) {
      if (this.#local.size < this.#max) break;
      if (local.scope.controllers.size > 0) continue;
      local.stream?.close();
      unwatch(local);
      this.#local.delete(id);
    }
  }
}

function levelOf(value: string | null | undefined): LogLevel | null {
  return isLogLevel(value) ? value : null;
}

function unwatch(local: Local): void {
  local.resources?.stop();
  local.resources = null;
  local.watched.clear();
}

/** Completions a session without a GET stream here keeps for one, at most (as many as it may be sent). */
const MAX_PENDING_COMPLETIONS = MAX_MCP_SESSION_URL_ELICITATIONS;

function newLocal(tenantId: string, now: number, scope: CallScope): Local {
  return {
    tenantId,
    lastSeen: now,
    scope,
    stream: null,
    replay: null,
    resumableUntil: 0,
    uris: [],
    urisRead: 0,
    resources: null,
    watched: new Set(),
    refreshing: Promise.resolve(),
    pendingCompletions: new Set(),
  };
}

function newScope(clientCapabilities?: Capabilities, revision?: string): CallScope {
  return {
    requests: new RequestCoordinator(),
    controllers: new Map(),
    logLevel: null,
    clientRequests: new ClientRequests(),
    ...(clientCapabilities ? { clientCapabilities } : {}),
    ...(revision ? { revision } : {}),
  };
}

/**
 * A handshake request's connection, from whichever POST carried it (alone or in a batch): the
 * session's revision, declared capabilities and log level, and — with a session — its
 * logging/setLevel (kept in the store, for whichever instance serves its next request), its
 * resources/subscribe set (kept in the store; updates go to its GET stream) and its requests to
 * the client (answered by POSTs with the session's id). Without a session, the request's scope
 * is its own and nothing can be asked of its client.
 */
export function sessionConnection(
  sessions: HandshakeSessions,
  at: {
    readonly tenantId: string;
    readonly sessionId: string | undefined;
    readonly hints: RevisionHints;
    readonly scope: CallScope;
    readonly revision: string;
  },
  log: (fields: Record<string, unknown>, message: string) => void,
): Connection {
  const { tenantId, sessionId, scope } = at;
  const resources = sessionId === undefined ? null : sessions.subscriptionsOf(sessionId);
  return {
    tenantId,
    scope: sessionId === undefined ? { requests: scope.requests, controllers: scope.controllers } : scope,
    hints: at.hints,
    handshake: {
      revision: at.revision,
      ...(scope.clientCapabilities ? { clientCapabilities: scope.clientCapabilities } : {}),
      logLevel: scope.logLevel,
      ...(sessionId === undefined
        ? {}
        : {
            setLogLevel: async (level: LogLevel) => {
              await sessions.setLogLevel(sessionId, tenantId, level);
            },
            onUrlElicitations: (elicitationIds: readonly string[]) =>
              sessions.noteElicitations(sessionId, tenantId, elicitationIds),
          }),
      ...(resources ? { resourceSubscriptions: resources } : {}),
    },
    log,
  };
}
