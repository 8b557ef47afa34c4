import type { FastifyInstance } from 'fastify';

export interface RootLinks {
  readonly [name: string]: string | undefined;
}

/**
 * GET /: a browser (its Accept prefers text/html) is redirected to the console; any other
 * client gets a JSON index of where things are, so that `curl localhost:8080` leads somewhere
 * instead of a 404.
 */
export function registerRootRoute(
  app: FastifyInstance,
  index: { readonly name: string; readonly version: string; readonly links: RootLinks },
): void {
  app.get('/', { schema: { hide: true } }, async (request, reply) => {
    reply.header('vary', 'accept');
    // The operations console where this server has one, otherwise the API's documentation.
    if (prefersHtml(request.headers.accept))
      return reply.redirect(index.links.console ?? index.links.docs ?? '/docs', 302);
    return {
      name: index.name,
      version: index.version,
      description:
        'Durable tasks for MCP tool calls: the REST API is described at links.openapi, for a person at links.docs',
      links: index.links,
    };
  });
}

/**
 * Whether an Accept header ranks text/html above application/json: a browser's
 * (`text/html,application/xhtml+xml,…,*\/*;q=0.8`) does, curl's `*\/*` and a JSON client's do not.
 * A type not named counts as its range's quality (`text/*`, then `*\/*`), as RFC 9110 §12.5.1 says.
 */
export function prefersHtml(accept: string | undefined): boolean {
  if (accept === undefined) return false;
  const ranges = accept.split(',').map((part) => {
    const [range = '', ...parameters] = part.split(';').map((piece) => piece.trim().toLowerCase());
    const q = parameters.find((parameter) => parameter.startsWith('q='));
    const quality = q === undefined ? 1 : Number(q.slice(2));
    return { range, quality: Number.isFinite(quality) ? quality : 0 };
  });
  const qualityOf = (type: string): number => {
    const [major] = type.split('/');
    for (const candidate of [type, `${major}/*`, '*/*']) {
      const found = ranges.find((entry) => entry.range === candidate);
      if (found) return found.quality;
    }
    return 0;
  };
  const html = qualityOf('text/html');
  return html > 0 && html > qualityOf('application/json');
}
