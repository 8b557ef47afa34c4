import { describe, expect, it } from 'vitest';
import { toolResultProblem } from './result-check.ts';

describe('toolResultProblem', () => {
  it('accepts a CallToolResult', () => {
    expect(toolResultProblem({ content: [] })).toBeNull();
    expect(
      toolResultProblem({ content: [{ type: 'text', text: 'x' }], structuredContent: { n: 1 }, isError: false }),
    ).toBeNull();
  });

  it.each([
    [undefined, 'returned nothing'],
    ['text', 'not a { content: [...] } result'],
    [{ content: 'nope' }, 'no content array'],
    [{ content: [{ text: 'no type' }] }, 'content[0]'],
    [{ content: [], structuredContent: [1] }, 'structuredContent'],
    [{ content: [], isError: 'yes' }, 'isError'],
  ])('names what is wrong with %j', (result, problem) => {
    expect(toolResultProblem(result)).toContain(problem);
  });
});
