import { describe, expect, it } from 'vitest';
import {
  definePrompt,
  defineResource,
  defineResourceTemplate,
  promptDefinitionProblem,
  resourceDefinitionProblem,
  resourceTemplateDefinitionProblem,
} from './content-definition.ts';

const read = () => [{ text: 'x' }];

describe('defineResource, defineResourceTemplate, definePrompt', () => {
  it('accepts a good declaration as it is', () => {
    const resource = { uri: 'docs://readme', name: 'readme', mimeType: 'text/markdown', size: 12, read };
    expect(defineResource(resource)).toBe(resource);
    const template = {
      uriTemplate: 'docs://{page}',
      name: 'page',
      complete: { page: () => ['a'] },
      read: () => null,
    };
    expect(defineResourceTemplate(template)).toBe(template);
    const prompt = {
      name: 'summarize',
      arguments: [{ name: 'topic', required: true }],
      get: () => ({ messages: [] }),
    };
    expect(definePrompt(prompt)).toBe(prompt);
  });

  it('says what is wrong with a resource', () => {
    const cases: [unknown, string][] = [
      [null, 'must be an object'],
      [{ uri: 'readme', name: 'r', read }, 'must be an absolute URI'],
      [{ uri: 'docs://a b', name: 'r', read }, 'must be an absolute URI'],
      [{ uri: 'docs://a\u0000', name: 'r', read }, 'must be an absolute URI'],
      [{ uri: 'docs://a', name: 'r' }, 'read must be a function'],
      [{ uri: 'docs://a', name: '', read }, 'name must be a string'],
      [{ uri: 'docs://a', name: 'r', size: -1, read }, 'size must be a whole number'],
      [{ uri: 'docs://a', name: 'r', size: '3', read }, 'size must be a whole number'],
      [{ uri: 'docs://a', name: 'r', timeoutMs: 0, read }, 'timeoutMs must be a positive integer'],
      // Past a timer's longest delay Node fires at once, and past 2^32 it throws: refused here.
      [{ uri: 'docs://a', name: 'r', timeoutMs: 3_000_000_000, read }, 'at most 2147483647'],
      [{ uri: 'docs://a', name: 'r', mimeType: 1, read }, 'mimeType must be a string'],
    ];
    for (const [definition, message] of cases) expect(resourceDefinitionProblem(definition)).toContain(message);
  });

  it('says what is wrong with a template', () => {
    const cases: [unknown, string][] = [
      [{ uriTemplate: 'docs://fixed', name: 't', read }, 'has no {name} expression'],
      [{ uriTemplate: 'docs://{a}', name: 't', read, complete: { b: () => [] } }, 'complete.b names no variable'],
      [{ uriTemplate: 'docs://{a}', name: 't', read, complete: { a: 'x' } }, 'complete.a must be a function'],
      [{ uriTemplate: 'docs://{a.b}', name: 't', read }, 'is not a simple {name} expression'],
    ];
    for (const [definition, message] of cases) expect(resourceTemplateDefinitionProblem(definition)).toContain(message);
  });

  it('says what is wrong with a prompt', () => {
    const get = () => ({ messages: [] });
    const cases: [unknown, string][] = [
      [{ name: 'a b', get }, 'must be 1-128 of'],
      [{ name: 'p' }, 'get must be a function'],
      [{ name: 'p', get, arguments: {} }, 'arguments must be an array'],
      [{ name: 'p', get, arguments: [{ name: 'x' }, { name: 'x' }] }, 'argument x appears twice'],
      [{ name: 'p', get, arguments: [{ name: 'x', required: 'yes' }] }, "argument x's required must be a boolean"],
      [{ name: 'p', get, arguments: [{}] }, 'each argument must have a name'],
      [{ name: 'p', get, complete: { y: () => [] } }, 'complete.y names no argument'],
    ];
    for (const [definition, message] of cases) expect(promptDefinitionProblem(definition)).toContain(message);
    expect(() => definePrompt({ name: 'p' } as never)).toThrow(TypeError);
  });
});
