import { type FastifyReply, type FastifyRequest, LogController } from 'fastify';

/** The longest URL a request line keeps: the rest of a 100 KB query string says nothing more. */
const URL_LIMIT = 512;

/**
 * One log line per HTTP request, once its answer is sent (or its stream has ended): method, URL,
 * status and milliseconds under `http`, at info — error, with the error, when the response failed.
 * Fastify's defaults are two lines per request ("incoming request", "request completed") and a
 * third for a 404; two per call doubled the volume and split what belongs together. A route's
 * own logLevel still applies (the probes log at warn). Fastify's other lines are kept.
 */
export class RequestLog extends LogController {
  override incomingRequest(): void {}

  override routeNotFound(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const url = request.url.length > URL_LIMIT ? `${request.url.slice(0, URL_LIMIT)}…` : request.url;
    const http = {
      method: request.method,
      url,
      status: reply.statusCode,
      ms: Math.round(reply.elapsedTime * 100) / 100,
    };
    if (error) reply.log.error({ http, err: error }, 'request');
    else reply.log.info({ http }, 'request');
  }
}
