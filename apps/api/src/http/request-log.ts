import type { RequestDurations } from '@taskgate/metrics';
import { type FastifyReply, type FastifyRequest, LogController } from 'fastify';
import { SSE_MESSAGES_PATH } from '../mcp/transports/http/sse-transport.ts';
import { rpcLogFields, rpcMethodLabel } from './rpc-summary.ts';

/** The longest URL a request line keeps: the rest of a 100 KB query string says nothing more. */
const URL_LIMIT = 512;

/** The routes whose POST body is a JSON-RPC message: their lines and series name its method. */
const RPC_ROUTES = new Set(['/mcp', SSE_MESSAGES_PATH]);

/** What a 404 (no route matched) is counted under: the raw URL would be a series per probe. */
const UNMATCHED_ROUTE = 'unmatched';

/**
 * One log line per HTTP request, once its answer is sent (or its stream has ended): method, URL,
 * status and milliseconds under `http`, at info — error, with the error, when the response failed;
 * on /mcp the JSON-RPC method and id under `rpc`. Fastify's defaults are two lines per request
 * ("incoming request", "request completed") and a third for a 404; two per call doubled the volume
 * and split what belongs together. A route's own logLevel still applies (the probes log at warn).
 * Fastify's other lines are kept. The same moment counts the request in `durations`
 * (taskgate_http_request_duration_seconds), so metrics cost no hook of their own.
 */
export class RequestLog extends LogController {
  readonly #durations: RequestDurations | null;

  constructor(options: { readonly durations?: RequestDurations } = {}) {
    super();
    this.#durations = options.durations ?? null;
  }

  override incomingRequest(): void {}

  override routeNotFound(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const route = request.routeOptions.url;
    const elapsedMs = reply.elapsedTime;
    const status = reply.statusCode;
    const method = request.method;
    const isRpc = method === 'POST' && route !== undefined && RPC_ROUTES.has(route);
    const rpcMethod = isRpc ? rpcMethodLabel(request.body) : null;
    this.#durations?.observe(route ?? UNMATCHED_ROUTE, method, status, rpcMethod, elapsedMs / 1_000);
    const url = request.url.length > URL_LIMIT ? `${request.url.slice(0, URL_LIMIT)}…` : request.url;
    const http = { method, url, status, ms: Math.round(elapsedMs * 100) / 100 };
    const rpc = isRpc ? rpcLogFields(request.body) : null;
    const fields = rpc === null ? { http } : { http, rpc };
    if (error) reply.log.error({ ...fields, err: error }, 'request');
    else if (status < 400 && isPoll(route, method, rpcMethod)) reply.log.debug(fields, 'request');
    else reply.log.info(fields, 'request');
  }
}

/**
 * A read of one task's state, which a watching client repeats every pollIntervalMs (`taskgate tasks
 * watch`, `taskgate call` waiting on a task, the SDK's task polling): at info, one watched task
 * would write a line a second. Logged at debug; a poll that is refused or fails stays at info.
 */
function isPoll(route: string | undefined, method: string, rpcMethod: string | null): boolean {
  return rpcMethod === 'tasks/get' || (method === 'GET' && route === '/v1/tasks/:id');
}
