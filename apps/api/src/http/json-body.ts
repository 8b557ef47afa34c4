import { TaskgateError } from '@taskgate/errors';
import type { FastifyInstance } from 'fastify';

/**
 * The JSON body parser, in place of Fastify's: the same refusals (an empty body, text that is not
 * JSON, a `__proto__` key or a `constructor.prototype`, which secure-json-parse refuses there),
 * each saying which it is — Fastify's says "not valid JSON" for all of them, so a caller whose
 * arguments held a `__proto__` key was told its well-formed JSON was malformed.
 */
export function installJsonBodyParser(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    try {
      done(null, parseJsonBody(body as string));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
}

/** A body's value, or TG_MALFORMED_JSON naming what is wrong with it. */
export function parseJsonBody(text: string): unknown {
  if (text.length === 0) throw new TaskgateError('TG_MALFORMED_JSON', 'the request body is empty');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new TaskgateError('TG_MALFORMED_JSON', `the request body is not valid JSON: ${(error as Error).message}`);
  }
  // Only a text that spells the key (escapes included, as secure-json-parse matches them) is
  // walked, and without recursion: a document 100,000 deep parses, and must not overflow here.
  if (PROTO_KEY.test(text) || CONSTRUCTOR_KEY.test(text)) refusePrototypeKeys(value);
  return value;
}

const PROTO_KEY =
  /"(?:_|\\u005[Ff])(?:_|\\u005[Ff])(?:p|\\u0070)(?:r|\\u0072)(?:o|\\u006[Ff])(?:t|\\u0074)(?:o|\\u006[Ff])(?:_|\\u005[Ff])(?:_|\\u005[Ff])"\s*:/;
const CONSTRUCTOR_KEY =
  /"(?:c|\\u0063)(?:o|\\u006[Ff])(?:n|\\u006[Ee])(?:s|\\u0073)(?:t|\\u0074)(?:r|\\u0072)(?:u|\\u0075)(?:c|\\u0063)(?:t|\\u0074)(?:o|\\u006[Ff])(?:r|\\u0072)"\s*:/;

function refusePrototypeKeys(root: unknown): void {
  const pending: unknown[] = [root];
  while (pending.length > 0) {
    const node = pending.pop();
    if (node === null || typeof node !== 'object') continue;
    // A loop, not push(...): a 1 MiB body can hold an array of 500,000 items, past the
    // arguments a call can take.
    if (Array.isArray(node)) {
      for (const item of node) pending.push(item);
      continue;
    }
    if (Object.hasOwn(node, '__proto__')) {
      throw new TaskgateError(
        'TG_MALFORMED_JSON',
        'the request body has a "__proto__" key, which is refused (it would rewrite an object\'s prototype)',
      );
    }
    const made = (node as { constructor?: unknown }).constructor;
    if (Object.hasOwn(node, 'constructor') && made !== null && typeof made === 'object') {
      if (Object.hasOwn(made, 'prototype')) {
        throw new TaskgateError(
          'TG_MALFORMED_JSON',
          'the request body has a "constructor" object with a "prototype" key, which is refused',
        );
      }
    }
    for (const key in node) pending.push((node as Record<string, unknown>)[key]);
  }
}
