import { isErrorCode, TaskgateError } from '@taskgate/errors';

/** A task as /v1 shows it (components.schemas.Task in /openapi.json). */
export interface RestTask {
  readonly id: string;
  readonly tool: string;
  readonly arguments: Record<string, unknown>;
  readonly status: 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';
  readonly statusMessage: string | null;
  readonly result: unknown;
  readonly [field: string]: unknown;
}

/** A tool as GET /v1/tools shows it (components.schemas.Tool in /openapi.json). */
export interface RestTool {
  readonly name: string;
  readonly title?: string;
  readonly description: string;
  readonly inputSchema: Record<string, unknown>;
  readonly taskSupport: 'forbidden' | 'optional' | 'required';
  readonly retry: 'safe' | 'conditional' | 'unsafe';
  readonly idempotencyKey?: 'required' | 'optional';
  readonly timeouts?: { readonly idleMs?: number; readonly maxMs?: number };
  readonly [field: string]: unknown;
}

/** The ledger's record of an idempotency key (GET /v1/idempotency-keys/{key}). */
export interface KeyRecord {
  readonly key: string;
  readonly operation: string;
  readonly state: string;
  readonly taskId: string | null;
  readonly result: unknown;
  readonly createdAt: string;
  readonly completedAt: string | null;
  readonly expiresAt: string;
}

/**
 * A call that left something for a person to decide (components.schemas of
 * GET /v1/reconciliation-items/{id}); the tenant is the token's, so it is not repeated.
 */
export interface RestReconciliationItem {
  readonly id: string;
  readonly taskId: string;
  readonly tool: string;
  readonly idempotencyKey: string | null;
  readonly kind: 'unknown_outcome' | 'abandoned_with_effects';
  readonly reason: string;
  readonly details: Record<string, unknown>;
  readonly createdAt: string;
  readonly resolvedAt: string | null;
  readonly resolution: string | null;
  readonly resolvedBy: string | null;
}

/**
 * The routes this client calls, as /openapi.json names them (method, OpenAPI path, the success
 * status): test/client/rest-client.test.ts checks each against the document the API serves,
 * and each answer against the schema the document gives it.
 */
export const REST_ROUTES = {
  listTasks: { method: 'get', path: '/v1/tasks', status: 200 },
  getTask: { method: 'get', path: '/v1/tasks/{id}', status: 200 },
  cancelTask: { method: 'post', path: '/v1/tasks/{id}/cancel', status: 202 },
  listTools: { method: 'get', path: '/v1/tools', status: 200 },
  getIdempotencyKey: { method: 'get', path: '/v1/idempotency-keys/{key}', status: 200 },
  listReconciliationItems: { method: 'get', path: '/v1/reconciliation-items', status: 200 },
  getReconciliationItem: { method: 'get', path: '/v1/reconciliation-items/{id}', status: 200 },
  resolveReconciliationItem: { method: 'post', path: '/v1/reconciliation-items/{id}/resolve', status: 200 },
} as const;

export interface RestClientOptions {
  /** The server, e.g. http://127.0.0.1:8080 (an /mcp URL is taken to mean its server). */
  readonly baseUrl: string;
  readonly token?: string;
  readonly fetch?: typeof fetch;
}

/**
 * A small typed client of Taskgate's /v1 REST API: what the CLI's `tasks list` and `keys get` read.
 * An RFC 9457 problem answer becomes a TaskgateError with the problem's code, so a caller matches
 * on the same codes as everywhere else.
 */
export class RestClient {
  readonly #base: string;
  readonly #headers: Record<string, string>;
  readonly #fetch: typeof fetch;

  constructor(options: RestClientOptions) {
    this.#base = options.baseUrl.replace(/\/mcp\/?$/, '').replace(/\/$/, '');
    this.#headers = {
      accept: 'application/json',
      ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
    };
    this.#fetch = options.fetch ?? fetch;
  }

  listTasks(query: { status?: RestTask['status']; limit?: number; cursor?: string } = {}) {
    return this.#call<{ tasks: RestTask[]; nextCursor: string | null }>('listTasks', {}, querySuffix(query));
  }

  getTask(id: string) {
    return this.#call<RestTask>('getTask', { id });
  }

  cancelTask(id: string, reason?: string) {
    return this.#call<RestTask>('cancelTask', { id }, '', reason === undefined ? {} : { reason });
  }

  /** The tools offered, sorted by name (one page). */
  listTools() {
    return this.#call<{ tools: RestTool[] }>('listTools', {});
  }

  getIdempotencyKey(key: string) {
    return this.#call<KeyRecord>('getIdempotencyKey', { key });
  }

  /** Newest first; `next` is the `before` of the following page (null on the last). */
  listReconciliationItems(query: { state?: 'open' | 'resolved' | 'all'; limit?: number; before?: string } = {}) {
    return this.#call<{ items: RestReconciliationItem[]; next: string | null }>(
      'listReconciliationItems',
      {},
      querySuffix(query),
    );
  }

  getReconciliationItem(id: string) {
    return this.#call<RestReconciliationItem>('getReconciliationItem', { id });
  }

  /** TG_RECONCILIATION_ITEM_RESOLVED (409) when somebody resolved it first. */
  resolveReconciliationItem(id: string, resolution: { resolution: string; resolvedBy: string }) {
    return this.#call<RestReconciliationItem>('resolveReconciliationItem', { id }, '', resolution);
  }

  async #call<T>(
    route: keyof typeof REST_ROUTES,
    params: Record<string, string>,
    suffix = '',
    body?: Record<string, unknown>,
  ): Promise<T> {
    const { method, path, status } = REST_ROUTES[route];
    const url = `${this.#base}${path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(params[name] ?? ''))}${suffix}`;
    let response: Response;
    try {
      response = await this.#fetch(url, {
        method: method.toUpperCase(),
        headers: body === undefined ? this.#headers : { ...this.#headers, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    } catch (error) {
      throw new TaskgateError(
        'TG_SERVER_UNREACHABLE',
        `could not connect to ${this.#base}: ${(error as Error).message}`,
        {
          cause: error,
        },
      );
    }
    const text = await response.text();
    let parsed: Record<string, unknown> | null;
    try {
      parsed = text === '' ? null : (JSON.parse(text) as Record<string, unknown>);
    } catch {
      // Something other than Taskgate answered: a proxy's HTML page, a different service on the port.
      throw new TaskgateError(
        'TG_SERVER_UNREACHABLE',
        `${this.#base} answered ${method.toUpperCase()} ${path} with HTTP ${response.status} and a body that is not JSON (${printableStart(text)}); is --url a Taskgate server?`,
        { details: { status: response.status } },
      );
    }
    if (response.status === status) return parsed as T;
    const code = parsed?.code;
    const detail = typeof parsed?.detail === 'string' ? parsed.detail : `HTTP ${response.status}`;
    throw new TaskgateError(typeof code === 'string' && isErrorCode(code) ? code : 'TG_REQUEST_INVALID', detail, {
      details: { status: response.status },
    });
  }
}

/** `?name=value&…` of the parameters given (none empty), or nothing. */
function querySuffix(query: Readonly<Record<string, string | number | undefined>>): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== '') search.set(name, String(value));
  }
  return search.size > 0 ? `?${search}` : '';
}

/** The first characters of a body, quoted with its control characters escaped, for an error message. */
function printableStart(text: string): string {
  return JSON.stringify(text.slice(0, 60));
}
