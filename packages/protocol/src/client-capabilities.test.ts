import { describe, expect, it } from 'vitest';
import { missingCapabilities } from './client-capabilities.ts';

const TASKS = { extensions: { 'io.modelcontextprotocol/tasks': {} } };

describe('missingCapabilities', () => {
  it('is null when every key path of the requirement is declared', () => {
    expect(missingCapabilities({ elicitation: {} }, { elicitation: { form: {} }, sampling: {} })).toBeNull();
    expect(missingCapabilities(TASKS, { extensions: { 'io.modelcontextprotocol/tasks': {}, other: {} } })).toBeNull();
    expect(missingCapabilities({}, undefined)).toBeNull();
  });

  it('reports the missing part shaped like the requirement', () => {
    expect(missingCapabilities(TASKS, {})).toEqual(TASKS);
    expect(missingCapabilities(TASKS, undefined)).toEqual(TASKS);
    expect(missingCapabilities(TASKS, { extensions: { other: {} } })).toEqual(TASKS);
    expect(
      missingCapabilities({ elicitation: { url: {} }, sampling: {} }, { elicitation: { form: {} }, sampling: {} }),
    ).toEqual({
      elicitation: { url: {} },
    });
  });

  it('does not take a non-object declaration for support', () => {
    expect(missingCapabilities({ sampling: {} }, { sampling: null })).toEqual({ sampling: {} });
    expect(missingCapabilities({ sampling: {} }, { sampling: false })).toEqual({ sampling: {} });
    expect(missingCapabilities({ sampling: {} }, { sampling: [] })).toEqual({ sampling: {} });
    expect(missingCapabilities({ elicitation: { form: {} } }, { elicitation: true })).toBeNull();
  });
});
