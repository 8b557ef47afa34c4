import v8 from 'node:v8';
import vm from 'node:vm';
import { describe, expect, it } from 'vitest';
import { inputAnswerProblem } from './input-answers.ts';

const form = (requestedSchema: Record<string, unknown>) => ({
  method: 'elicitation/create',
  params: { mode: 'form', message: 'How much?', requestedSchema },
});
const CHARGE = form({
  type: 'object',
  properties: {
    cents: { type: 'integer', minimum: 1 },
    currency: { type: 'string', enum: ['EUR', 'USD'] },
    email: { type: 'string', format: 'email' },
    tags: { type: 'array', items: { type: 'string', enum: ['a', 'b'] } },
  },
  required: ['cents'],
});

describe('inputAnswerProblem', () => {
  it('takes content that matches the requestedSchema, and a decline or cancel without any', () => {
    const ok = { cents: 250, currency: 'EUR', email: 'ada@example.com', tags: ['a'] };
    expect(inputAnswerProblem(CHARGE, { action: 'accept', content: ok })).toBeNull();
    expect(inputAnswerProblem(CHARGE, { action: 'decline' })).toBeNull();
    expect(inputAnswerProblem(CHARGE, { action: 'cancel' })).toBeNull();
  });

  it('refuses content the requestedSchema refuses, naming the field: nothing is coerced', () => {
    const problem = (content: unknown) => inputAnswerProblem(CHARGE, { action: 'accept', content });
    // A boolean is not a number of cents, nor is "250".
    expect(problem({ cents: true })).toMatch(/content\.cents .*must be integer/);
    expect(problem({ cents: '250' })).toMatch(/content\.cents/);
    expect(problem({ cents: 0 })).toMatch(/content\.cents .*>= 1/);
    expect(problem({})).toMatch(/content\.cents .*required/);
    expect(problem(undefined)).toMatch(/content\.cents/);
    expect(problem({ cents: 1, currency: 'GBP' })).toMatch(/content\.currency/);
    expect(problem({ cents: 1, email: 'not an address' })).toMatch(/content\.email/);
    expect(problem({ cents: 1, tags: ['c'] })).toMatch(/content\.tags\.0/);
  });

  it('checks the shape of every kind of answer, and nothing more where there is no form', () => {
    expect(inputAnswerProblem(CHARGE, { action: 'maybe' })).toMatch(/action/);
    expect(inputAnswerProblem(CHARGE, 'accept')).toBe('is not an object');
    const url = { method: 'elicitation/create', params: { mode: 'url', url: 'https://x', message: 'go' } };
    expect(inputAnswerProblem(url, { action: 'accept' })).toBeNull();
    const sampling = { method: 'sampling/createMessage', params: {} };
    expect(inputAnswerProblem(sampling, { role: 'assistant', model: 'm', content: {} })).toBeNull();
    expect(inputAnswerProblem(sampling, { role: 'system', model: 'm', content: {} })).toMatch(/role/);
    expect(inputAnswerProblem({ method: 'roots/list', params: {} }, { roots: [{ uri: 1 }] })).toMatch(/uri/);
  });

  it('checks only what MCP’s form schema defines: $schema, $id and pattern change nothing', async () => {
    const draft07 = form({
      $schema: 'http://json-schema.org/draft-07/schema#',
      $id: 'https://example.com/form',
      type: 'object',
      properties: { name: { type: 'string', minLength: 2, pattern: '^([a-zA-Z]+\\s?)*$' } },
      required: ['name'],
    });
    expect(inputAnswerProblem(draft07, { action: 'accept', content: { name: 'bob' } })).toBeNull();
    expect(inputAnswerProblem(draft07, { action: 'accept', content: { name: 'b' } })).toMatch(/content\.name/);
    // Another form under the same $id is its own form.
    const other = form({ $id: 'https://example.com/form', type: 'object', properties: { n: { type: 'integer' } } });
    expect(inputAnswerProblem(other, { action: 'accept', content: { n: 'x' } })).toMatch(/content\.n/);
    // The pattern is not run: an answer built to make a backtracking regex take minutes is just a string.
    const evil = `${'a'.repeat(40)}!`;
    const started = performance.now();
    expect(inputAnswerProblem(draft07, { action: 'accept', content: { name: evil } })).toBeNull();
    expect(performance.now() - started).toBeLessThan(100);
  });

  it('takes the content unchecked when the requestedSchema cannot be compiled: the tool’s mistake, not the client’s', () => {
    const broken = form({ type: 'object', properties: { a: { type: 'no-such-type' } } });
    expect(inputAnswerProblem(broken, { action: 'accept', content: { a: 1 } })).toBeNull();
    expect(inputAnswerProblem(broken, { action: 'maybe' })).toMatch(/action/);
  });

  it('keeps its memory bounded however many distinct forms it checks', () => {
    // A real collection before each reading: garbage is not growth.
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    const heap = () => {
      gc();
      gc();
      return process.memoryUsage().heapUsed;
    };
    const check = (i: number) =>
      inputAnswerProblem(form({ type: 'object', properties: { pick: { type: 'string', enum: [`v${i}`] } } }), {
        action: 'accept',
        content: { pick: `v${i}` },
      });
    for (let i = 0; i < 500; i += 1) expect(check(i)).toBeNull();
    const before = heap();
    for (let i = 500; i < 3_500; i += 1) check(i);
    // 3,000 distinct forms: unbounded, that was some 17 MB (5.8 KB each); bounded, a few MB at most.
    expect((heap() - before) / 1e6).toBeLessThan(6);
  });
});
