import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Authenticator } from '../http/auth.ts';
import { checkDecodedInput } from '../http/decoded-input.ts';
import { problem, sendProblem } from '../http/problem.ts';
import { type ConsoleSessions, registerSessionRoutes } from './console-sessions.ts';

/**
 * The console's files, served as they are written (docs/design/console.md: no build step). Beside
 * src/ rather than in it, so that a packed @taskgate/api ships them next to its compiled dist/ at
 * the same relative place (scripts/pack-packages.ts copies the folder).
 */
export const CONSOLE_ASSETS = fileURLToPath(new URL('../../console-assets/', import.meta.url));

/**
 * Every /ui answer's headers. No inline script or style and no source but this origin: a value
 * the console shows (a tool's result, a task's error) can never run as script, even if it got
 * into the page as markup. frame-ancestors: no page may frame the console (clickjacking a
 * "Cancel task"). The DNS-rebinding guard covers /ui as every route (request-guards.ts).
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

const TYPES: Readonly<Record<string, string>> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.html': 'text/html; charset=utf-8',
};

interface Asset {
  readonly body: Buffer;
  readonly type: string;
  readonly etag: string;
}

/** Reads the assets once, at start: a deploy replaces the process, and with it what is served. */
function loadAssets(folder: string): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  for (const name of readdirSync(folder)) {
    const type = TYPES[path.extname(name)];
    if (type === undefined) continue;
    const body = readFileSync(path.join(folder, name));
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
    assets.set(name, { body, type, etag });
  }
  return assets;
}

function consoleHeaders(reply: FastifyReply): void {
  reply.header('content-security-policy', CONSOLE_CSP);
  reply.header('x-content-type-options', 'nosniff');
  reply.header('referrer-policy', 'no-referrer');
  reply.header('x-frame-options', 'DENY');
  reply.header('cross-origin-opener-policy', 'same-origin');
}

/**
 * /ui: the console's shell for every page path (each page has its own URL, and reloads), its
 * assets under /ui/assets/, and the sign-in routes. The page reads everything else from /v1.
 */
export async function registerConsoleRoutes(
  app: FastifyInstance,
  options: { readonly auth: Authenticator; readonly sessions: ConsoleSessions | null; readonly assets?: string },
): Promise<void> {
  const assets = loadAssets(options.assets ?? CONSOLE_ASSETS);
  const shell = assets.get('index.html');
  if (shell === undefined)
    throw new Error(`the console's index.html is missing from ${options.assets ?? CONSOLE_ASSETS}`);
  await app.register(async (ui) => {
    ui.addHook('onRequest', async (_request, reply) => consoleHeaders(reply));
    // A NUL or a lone surrogate in a sign-in body is refused as it is on /v1.
    checkDecodedInput(ui);
    registerSessionRoutes(ui, options);
    const sendShell = async (_request: unknown, reply: FastifyReply) =>
      // The shell holds no data (the page asks /v1 for it, signed in), so it may be cached, revalidated.
      reply.header('cache-control', 'no-cache').header('etag', shell.etag).type(shell.type).send(shell.body);
    ui.get('/ui', { schema: { hide: true } }, sendShell);
    ui.get('/ui/*', { schema: { hide: true } }, sendShell);
    ui.get('/ui/assets/:name', { schema: { hide: true } }, async (request, reply) => {
      const name = (request.params as { name: string }).name;
      const asset = name === 'index.html' ? undefined : assets.get(name);
      if (asset === undefined) {
        return sendProblem(reply, problem('TG_NOT_FOUND', `the console has no file ${name}`, request.url));
      }
      reply.header('cache-control', 'no-cache').header('etag', asset.etag);
      if (request.headers['if-none-match'] === asset.etag) return reply.code(304).send();
      return reply.type(asset.type).send(asset.body);
    });
  });
}
