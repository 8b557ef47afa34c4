import { describe, expect, it } from 'vitest';
import { defineTool, toolDefinitionProblem } from './tool-definition.ts';

const valid = {
  name: 'echo',
  description: 'echoes',
  inputSchema: { type: 'object' },
  retry: 'safe' as const,
  handler: async () => ({ content: [] }),
};

describe('defineTool', () => {
  it('accepts a minimal declaration and returns it unchanged', () => {
    expect(defineTool(valid)).toBe(valid);
  });

  it.each([
    [{ ...valid, name: 'has space' }, 'must be 1-128 of'],
    [{ ...valid, handler: 'nope' }, 'handler must be a function'],
    [{ ...valid, inputSchema: { type: 'string' } }, 'inputSchema must be a JSON Schema with type "object"'],
    [{ ...valid, retry: 'sometimes' }, 'retry must be'],
    [{ ...valid, retry: 'conditional', inline: true }, 'only a safe tool may run inline'],
    [{ ...valid, inline: true, taskSupport: 'required' }, 'taskSupport is forbidden'],
    [{ ...valid, idempotencyKey: 'required' }, 'only a conditional tool takes an idempotency key'],
    [{ ...valid, timeouts: { idleMs: 1.5 } }, 'timeouts.idleMs must be a positive integer'],
    [{ ...valid, timeouts: { maxMs: true } }, 'timeouts.maxMs must be a positive integer'],
    [{ ...valid, subprocessGraceMs: -1 }, 'subprocessGraceMs must be an integer of milliseconds from 0 to 60000'],
    [{ ...valid, subprocessGraceMs: 60_001 }, 'subprocessGraceMs must be an integer'],
    [{ ...valid, subprocessGraceMs: '5000' }, 'subprocessGraceMs must be an integer'],
    [{ ...valid, description: 7 }, 'description must be a string'],
    [{ ...valid, taskSupport: 'always' }, 'taskSupport must be'],
  ])('refuses %j', (definition, message) => {
    expect(toolDefinitionProblem(definition)).toContain(message);
    expect(() => defineTool(definition as never)).toThrow(message);
  });

  it('takes a subprocess grace from 0 (SIGKILL at once) to 60 s', () => {
    for (const subprocessGraceMs of [0, 2_000, 60_000]) {
      expect(toolDefinitionProblem({ ...valid, subprocessGraceMs })).toBeNull();
    }
  });

  it('refuses what is not an object at all', () => {
    expect(toolDefinitionProblem(null)).toContain('a tool must be an object');
    expect(toolDefinitionProblem([valid])).toContain('a tool must be an object');
  });
});
