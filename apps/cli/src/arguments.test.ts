import { isTaskgateError } from '@taskgate/errors';
import { describe, expect, it } from 'vitest';
import { nearest, parseCommandArgs } from './arguments.ts';

describe('nearest', () => {
  const options = ['role', 'no-migrate', 'tools', 'json', 'module', 'all', 'to'];

  it('names the option a typo most likely meant: a letter off, two swapped, a prefix', () => {
    expect(nearest('roles', options)).toBe('role');
    expect(nearest('jsno', options)).toBe('json');
    expect(nearest('tool', options)).toBe('tools');
    expect(nearest('modlue', options)).toBe('module');
    expect(nearest('no-mig', options)).toBe('no-migrate');
  });

  it('offers nothing when nothing is near, rather than a wild guess', () => {
    expect(nearest('colour', options)).toBeNull();
    expect(nearest('x', options)).toBeNull();
    expect(nearest('verbose', options)).toBeNull();
  });
});

describe('parseCommandArgs', () => {
  const usage = (run: () => unknown): string => {
    try {
      run();
    } catch (error) {
      if (isTaskgateError(error) && error.code === 'TG_USAGE') return error.message;
      throw error;
    }
    throw new Error('accepted');
  };
  const options = { tools: { type: 'string', multiple: true }, json: { type: 'boolean' } } as const;

  it('parses what the command takes', () => {
    expect(parseCommandArgs('x', ['--tools', 'a', '--json'], options, false).values).toEqual({
      tools: ['a'],
      json: true,
    });
  });

  it('turns every parse error into one usage line pointing at the command help', () => {
    expect(usage(() => parseCommandArgs('x', ['--tool', 'a'], options, false))).toBe(
      'unknown option --tool for x; did you mean --tools? (run taskgate x --help)',
    );
    expect(usage(() => parseCommandArgs('x', ['stray'], options, false))).toMatch(
      /^Unexpected argument 'stray'.*; run taskgate x --help$/,
    );
    expect(usage(() => parseCommandArgs('x', ['--tools'], options, false))).toMatch(
      /^Option '--tools <value>' argument missing; run taskgate x --help$/,
    );
  });
});
