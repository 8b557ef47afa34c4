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

  it('says so when a requestedSchema cannot be compiled, instead of taking anything', () => {
    const broken = form({ type: 'object', properties: { a: { type: 'no-such-type' } } });
    expect(inputAnswerProblem(broken, { action: 'accept', content: { a: 1 } })).toMatch(/does not compile/);
  });
});
