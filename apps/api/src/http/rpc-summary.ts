/**
 * What the request log and taskgate_http_request_duration_seconds say of a JSON-RPC POST's body
 * (/mcp, and /messages of the HTTP+SSE transport), read after the answer, from the parsed body.
 */

/**
 * The methods the rpc_method label names: those of the revisions served here (apps/api/src/mcp/
 * revisions) and what clients send of the spec besides. Anything else is `other`: a client's
 * made-up method names must not make a series each.
 */
const KNOWN_METHODS = new Map(
  [
    'initialize',
    'ping',
    'server/discover',
    'tools/list',
    'tools/call',
    'tasks/get',
    'tasks/list',
    'tasks/cancel',
    'tasks/result',
    'tasks/update',
    'resources/list',
    'resources/read',
    'resources/templates/list',
    'resources/subscribe',
    'resources/unsubscribe',
    'subscriptions/listen',
    'prompts/list',
    'prompts/get',
    'completion/complete',
    'logging/setLevel',
    'notifications/initialized',
    'notifications/cancelled',
    'notifications/progress',
    'notifications/roots/list_changed',
  ].map((method) => [method, method]),
);

/** The longest method name or string id a log line keeps. */
const TEXT_LIMIT = 128;

/** rpc_method's values besides the methods: a batch, a client's response, a body that is no message. */
export const RPC_BATCH = 'batch';
export const RPC_RESPONSE = 'response';
export const RPC_OTHER = 'other';
export const RPC_INVALID = 'invalid';

function methodOf(body: unknown): unknown {
  return typeof body === 'object' && body !== null ? (body as { method?: unknown }).method : undefined;
}

/** The rpc_method label: one of a bounded set. */
export function rpcMethodLabel(body: unknown): string {
  if (Array.isArray(body)) return RPC_BATCH;
  const method = methodOf(body);
  // The constant, not the body's string: the histogram's maps then hash the same object each time.
  if (typeof method === 'string') return KNOWN_METHODS.get(method) ?? RPC_OTHER;
  if (typeof body === 'object' && body !== null && ('result' in body || 'error' in body)) return RPC_RESPONSE;
  return RPC_INVALID;
}

/** What a request line says of the message: its method and id as sent (cut short), or a batch's size. */
export function rpcLogFields(body: unknown): Record<string, unknown> | null {
  if (Array.isArray(body)) return { batch: body.length };
  if (typeof body !== 'object' || body === null) return null;
  const { method, id } = body as { method?: unknown; id?: unknown };
  const fields: Record<string, unknown> = {};
  if (typeof method === 'string') fields.method = cut(method);
  if (typeof id === 'number' || id === null) fields.id = id;
  else if (typeof id === 'string') fields.id = cut(id);
  return fields;
}

function cut(text: string): string {
  return text.length > TEXT_LIMIT ? `${text.slice(0, TEXT_LIMIT)}…` : text;
}
