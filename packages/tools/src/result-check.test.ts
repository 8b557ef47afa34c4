import { describe, expect, it } from 'vitest';
import { toolResultProblem } from './result-check.ts';

describe('toolResultProblem', () => {
  it('accepts a CallToolResult', () => {
    expect(toolResultProblem({ content: [] })).toBeNull();
    expect(
      toolResultProblem({ content: [{ type: 'text', text: 'x' }], structuredContent: { n: 1 }, isError: false }),
    ).toBeNull();
  });

  it('accepts every kind of MCP content block', () => {
    expect(
      toolResultProblem({
        content: [
          { type: 'text', text: 'x', annotations: { priority: 1 }, _meta: { a: 1 } },
          { type: 'image', data: 'aGk=', mimeType: 'image/png' },
          { type: 'audio', data: 'aGk=', mimeType: 'audio/wav' },
          { type: 'resource_link', uri: 'file:///a', name: 'a', size: 3 },
          { type: 'resource', resource: { uri: 'file:///a', text: 'a' } },
          { type: 'resource', resource: { uri: 'file:///b', blob: 'aGk=' } },
        ],
      }),
    ).toBeNull();
  });

  const cyclic: Record<string, unknown> = { content: [] };
  cyclic.structuredContent = { self: cyclic };

  it.each([
    [undefined, 'returned nothing'],
    [{ content: [{ type: 'txt', text: 5 }] }, 'content[0] of its result has type "txt", which is not one of text,'],
    [{ content: [{ type: 'text', text: 5 }] }, 'content[0] of its result is a text block whose text is not a string'],
    [{ content: [{ type: 'image', data: 'x' }] }, 'is a image block whose mimeType is not a string'],
    [{ content: [{ type: 'resource_link', uri: 'u', name: 'n', size: 1.5 }] }, 'whose size is not an integer'],
    [{ content: [{ type: 'resource', resource: { uri: 'u' } }] }, 'neither a text nor a blob string'],
    [{ content: [{ type: 'text', text: 'x', annotations: 'high' }] }, 'annotations that are not an object'],
    [{ content: [null] }, 'content[0] of its result is not a content block object'],
    [
      { content: [{ type: 'text', text: 'a\u0000b' }] },
      'cannot be stored: a string contains U+0000 (NUL), which Postgres cannot store (at /content/0/text)',
    ],
    [{ content: [], structuredContent: { n: 10n } }, 'its result is not JSON: Do not know how to serialize a BigInt'],
    [cyclic, 'its result is not JSON: Converting circular structure to JSON'],
    [
      { content: [], structuredContent: { n: Number.NaN } },
      'cannot be stored: a number is outside the range of a double',
    ],
    ['text', 'not a { content: [...] } result'],
    [{ content: 'nope' }, 'no content array'],
    [{ content: [{ text: 'no type' }] }, 'content[0]'],
    [{ content: [], structuredContent: [1] }, 'structuredContent'],
    [{ content: [], isError: 'yes' }, 'isError'],
  ])('names what is wrong with result %#: %s', (result, problem) => {
    expect(toolResultProblem(result)).toContain(problem);
  });
});
