import { TaskgateError } from '@taskgate/errors';
import { parseJsonText } from '@taskgate/protocol';
import type { FastifyInstance, FastifyRequest } from 'fastify';

/**
 * The JSON body parser, in place of Fastify's, for REST and /mcp alike. It reads the body as bytes
 * and refuses, each with its own code, what Fastify's would have taken in or misnamed:
 *
 * - a content coding (`Content-Encoding: gzip`): Fastify ignores the header and serves the coded
 *   bytes as they are. RFC 9110 section 8.4.1: 415, with Accept-Encoding saying what is (problem.ts);
 * - a charset other than UTF-8, which Fastify decoded as UTF-8 anyway: 415 (RFC 8259 section 8.1,
 *   JSON exchanged between systems MUST be UTF-8);
 * - bytes that are not UTF-8 (`FF FE`, overlong `C0 80`, CESU-8 surrogates, a truncated sequence),
 *   which Fastify's decoder turned into U+FFFD and stored: TG_ENCODING_INVALID;
 * - then parseJsonText (packages/protocol, as stdio reads its lines): not JSON, a prototype key, a
 *   key written twice, a number its double does not mean.
 */
export function installJsonBodyParser(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    try {
      done(null, parseJsonBody(body as Buffer, request));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
}

// ignoreBOM keeps a byte-order mark in the text, where JSON.parse refuses it (RFC 8259 section 8.1:
// a BOM MUST NOT be added), rather than dropping it without a word.
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** A body's value, or the TaskgateError naming what is wrong with it. */
export function parseJsonBody(body: Buffer, request?: Pick<FastifyRequest, 'headers'>): unknown {
  if (request) refuseCodingAndCharset(request.headers);
  let text: string;
  try {
    text = UTF8.decode(body);
  } catch {
    throw new TaskgateError('TG_ENCODING_INVALID', 'the request body is not valid UTF-8');
  }
  const parsed = parseJsonText(text);
  if (parsed.ok) return parsed.value;
  const { code, path, message } = parsed.problem;
  throw new TaskgateError(code, `the request body ${message}`, {
    ...(code === 'TG_MALFORMED_JSON' ? {} : { details: { errors: [{ location: 'body', path, message }] } }),
  });
}

/**
 * The labels of UTF-8 (WHATWG Encoding Standard): `utf8` is what many clients send, and naming
 * the encoding so is no different body; anything else is another encoding, or a garbled value.
 */
const UTF8_LABELS = new Set([
  'utf-8',
  'utf8',
  'unicode-1-1-utf-8',
  'unicode11utf8',
  'unicode20utf8',
  'x-unicode20utf8',
]);

/** A Content-Encoding that codes nothing: `identity`, alone or listed again (RFC 9110 lists). */
function isIdentity(coding: string): boolean {
  const codings = coding
    .split(',')
    .map((part) => part.trim().toLowerCase())
    .filter((part) => part !== '');
  return codings.length > 0 && codings.every((part) => part === 'identity');
}

function refuseCodingAndCharset(headers: FastifyRequest['headers']): void {
  const coding = headers['content-encoding'];
  if (coding !== undefined && !isIdentity(coding)) {
    throw new TaskgateError(
      'TG_CONTENT_ENCODING_UNSUPPORTED',
      `the request body's content coding ${JSON.stringify(coding.slice(0, 40))} is not supported; send it uncoded`,
    );
  }
  const charset = charsetOf(headers['content-type'] ?? '');
  if (charset !== null && !UTF8_LABELS.has(charset)) {
    throw new TaskgateError(
      'TG_UNSUPPORTED_MEDIA_TYPE',
      `the request body's charset ${JSON.stringify(charset.slice(0, 40))} is not supported; send UTF-8`,
    );
  }
}

/** The media type's charset parameter, lower-cased, or null; a second one must agree with the first. */
function charsetOf(contentType: string): string | null {
  if (!contentType.includes(';')) return null;
  let found: string | null = null;
  for (const parameter of contentType.split(';').slice(1)) {
    const equals = parameter.indexOf('=');
    if (equals === -1 || parameter.slice(0, equals).trim().toLowerCase() !== 'charset') continue;
    const value = parameter
      .slice(equals + 1)
      .trim()
      .replace(/^"(.*)"$/, '$1')
      .toLowerCase();
    if (found !== null && found !== value) return `${found}, ${value}`;
    found = value;
  }
  return found;
}
