import { isTaskgateError } from '@taskgate/errors';
import { describe, expect, it } from 'vitest';
import { parseJsonBody } from './json-body.ts';

const body = Buffer.from('{"tool":"greet"}');
const codeOf = (headers: Record<string, string>) => {
  try {
    parseJsonBody(body, { headers });
    return 'taken';
  } catch (error) {
    return isTaskgateError(error) ? error.code : String(error);
  }
};

// Labels and lists that say "UTF-8" and "not coded" are taken; everything else is refused
// (the refusals are the hostile corpus's, test/hostile/rest-cases.ts).
describe('parseJsonBody headers', () => {
  it('takes UTF-8 under any of its labels, quoted or in any case', () => {
    for (const charset of ['utf-8', 'UTF-8', '"utf-8"', 'utf8', 'UTF8', 'unicode-1-1-utf-8', 'x-unicode20utf8']) {
      expect(codeOf({ 'content-type': `application/json; charset=${charset}` }), charset).toBe('taken');
    }
    for (const charset of ['utf-16', 'latin1', 'utf8, utf-8', 'utf-8x', '']) {
      expect(codeOf({ 'content-type': `application/json; charset=${charset}` }), charset).toBe(
        'TG_UNSUPPORTED_MEDIA_TYPE',
      );
    }
  });

  it('takes identity as a coding, listed once or more; refuses any other coding in the list', () => {
    for (const coding of ['identity', 'Identity', 'identity, identity', 'identity,,identity ']) {
      expect(codeOf({ 'content-encoding': coding }), coding).toBe('taken');
    }
    for (const coding of ['gzip', 'identity, gzip', ',', '']) {
      expect(codeOf({ 'content-encoding': coding }), coding).toBe('TG_CONTENT_ENCODING_UNSUPPORTED');
    }
  });
});
