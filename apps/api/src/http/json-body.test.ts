import { isTaskgateError } from '@taskgate/errors';
import { describe, expect, it } from 'vitest';
import { parseJsonBody } from './json-body.ts';

function refusal(text: string): string {
  try {
    parseJsonBody(text);
  } catch (error) {
    if (isTaskgateError(error, 'TG_MALFORMED_JSON')) return error.message;
    throw error;
  }
  throw new Error(`${text.slice(0, 40)} was accepted`);
}

describe('parseJsonBody', () => {
  it('names a prototype key, however it is spelled and however deep', () => {
    expect(refusal('{"a":[{"b":{"__proto__":{}}}]}')).toContain('"__proto__" key');
    expect(refusal('{"\\u005f\\u005Fproto__" : 1}')).toContain('"__proto__" key');
    expect(refusal('[{"constructor":{"prototype":{"admin":true}}}]')).toContain('"constructor" object');
    expect(refusal('')).toBe('the request body is empty');
    expect(refusal('{"a":')).toMatch(/^the request body is not valid JSON: /);
  });

  it('accepts the words where they are not keys, and keys that only look alike', () => {
    expect(parseJsonBody('{"text":"\\"__proto__\\": 1","constructor":"a string"}')).toEqual({
      text: '"__proto__": 1',
      constructor: 'a string',
    });
    expect(parseJsonBody('{"constructor":{"name":"x"},"proto":1}')).toEqual({ constructor: { name: 'x' }, proto: 1 });
  });

  it('walks a wide array and a deep one without running out of stack', () => {
    // The key spelled inside a string value makes the walk run over what follows.
    const wide = `{"s":"\\"__proto__\\":","a":[${Array(500_000).fill(0).join(',')}]}`;
    expect((parseJsonBody(wide) as { a: number[] }).a).toHaveLength(500_000);
    const deep = `{"s":"\\"constructor\\":","d":${'['.repeat(100_000)}${']'.repeat(100_000)}}`;
    expect(parseJsonBody(deep)).toHaveProperty('d');
  });
});
