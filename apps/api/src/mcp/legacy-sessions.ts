import { randomUUID } from 'node:crypto';
import type { Capabilities } from '@taskgate/protocol';
import { RequestCoordinator } from '@taskgate/reliability';
import type { SseStream } from '../sse/sse-stream.ts';

/**
 * Sessions of the handshake era (initialize, Mcp-Session-Id), each with its negotiated revision. They exist for one reason
 * here: a client of that era cancels by POSTing `notifications/cancelled {requestId}`, and request
 * ids are only unique per client — so a cancel is matched within the session that sent the request
 * (or within the tenant, for a client that ignores the session header). Held in this process's
 * memory: behind a load balancer, a POSTed cancel must reach the process that holds the request
 * (sticky sessions); closing the response stream cancels wherever it lands.
 */
export interface CallScope {
  /** One terminal state per request of this scope: the POSTed cancel and the result race here. */
  readonly requests: RequestCoordinator;
  readonly controllers: Map<string, AbortController>;
  /** What the client declared at initialize; undefined without a session (nothing declared). */
  readonly clientCapabilities?: Capabilities;
  /** The revision negotiated at initialize; undefined without a session (the header says). */
  readonly revision?: string;
}

interface Session {
  readonly tenantId: string;
  lastSeen: number;
  readonly scope: CallScope;
  /** The session's GET stream, if the client opened one: where server notifications go. */
  stream: SseStream | null;
}

export class LegacySessions {
  readonly #sessions = new Map<string, Session>();
  readonly #tenantScopes = new Map<string, CallScope>();
  readonly #idleMs: number;
  readonly #max: number;
  readonly #now: () => number;

  constructor(options: { idleMs?: number; max?: number; now?: () => number } = {}) {
    this.#idleMs = options.idleMs ?? 3_600_000;
    this.#max = options.max ?? 10_000;
    this.#now = options.now ?? Date.now;
  }

  /** A new session for an initialize; the oldest ones go when there are too many. */
  open(tenantId: string, revision: string, clientCapabilities?: Capabilities): string {
    this.#evict();
    const id = randomUUID();
    this.#sessions.set(id, {
      tenantId,
      lastSeen: this.#now(),
      scope: newScope(clientCapabilities, revision),
      stream: null,
    });
    return id;
  }

  /**
   * The session's GET stream (transports "Listening for Messages from the Server"): messages
   * unrelated to any request go there. One per session, since a message goes on one stream only
   * ("Multiple Connections"): a newer GET replaces the older, which is closed. False when the
   * session is unknown, expired or another tenant's.
   */
  attachStream(sessionId: string, tenantId: string, stream: SseStream): boolean {
    const session = this.#sessions.get(sessionId);
    if (!session || this.scopeOf(sessionId, tenantId) === null) return false;
    session.stream?.close();
    session.stream = stream;
    stream.onClose(() => {
      if (session.stream === stream) session.stream = null;
    });
    return true;
  }

  /** Sends `message` on every session's GET stream (replacing one of the same key still undelivered). */
  notifyStreams(message: Record<string, unknown>, key: string): void {
    for (const session of this.#sessions.values()) {
      session.stream?.push({ kind: 'replaceable', key, value: { data: message } });
    }
  }

  /** Ends every GET stream (the server is closing; a client reopens it elsewhere). */
  closeStreams(): void {
    for (const session of this.#sessions.values()) session.stream?.close();
  }

  /** The session's scope, or null when the id is unknown, expired, or another tenant's (all 404). */
  scopeOf(sessionId: string, tenantId: string): CallScope | null {
    const session = this.#sessions.get(sessionId);
    if (!session || session.tenantId !== tenantId || this.#now() - session.lastSeen > this.#idleMs) return null;
    session.lastSeen = this.#now();
    return session.scope;
  }

  /** The scope of a tenant's requests sent without a session id. */
  tenantScope(tenantId: string): CallScope {
    let scope = this.#tenantScopes.get(tenantId);
    if (!scope) {
      scope = newScope();
      this.#tenantScopes.set(tenantId, scope);
    }
    return scope;
  }

  /** DELETE with the session id: the client is done with it. */
  close(sessionId: string, tenantId: string): boolean {
    const session = this.#sessions.get(sessionId);
    if (!session || session.tenantId !== tenantId) return false;
    session.stream?.close();
    this.#sessions.delete(sessionId);
    return true;
  }

  #evict(): void {
    const now = this.#now();
    for (const [id, session] of this.#sessions) {
      if (now - session.lastSeen > this.#idleMs && session.scope.controllers.size === 0 && !session.stream) {
        this.#sessions.delete(id);
      }
    }
    while (this.#sessions.size >= this.#max) {
      const oldest = this.#sessions.keys().next().value as string;
      this.#sessions.get(oldest)?.stream?.close();
      this.#sessions.delete(oldest);
    }
  }
}

function newScope(clientCapabilities?: Capabilities, revision?: string): CallScope {
  return {
    requests: new RequestCoordinator(),
    controllers: new Map(),
    ...(clientCapabilities ? { clientCapabilities } : {}),
    ...(revision ? { revision } : {}),
  };
}
