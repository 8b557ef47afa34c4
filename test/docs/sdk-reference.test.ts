import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/cli.ts';
import { interfaceMembers } from './interface-members.ts';

const reference = readFileSync(path.join(REPO_ROOT, 'docs/reference/sdk.md'), 'utf8');
const sdkSource = (file: string) => readFileSync(path.join(REPO_ROOT, 'packages/sdk/src', file), 'utf8');

describe('docs/reference/sdk.md', () => {
  it('has a row for every option of defineTool (the ToolDefinition interface)', () => {
    const options = interfaceMembers(sdkSource('tool-definition.ts'), 'ToolDefinition');
    expect(options).toEqual(expect.arrayContaining(['name', 'retry', 'timeouts', 'askFirst', 'handler']));
    expect(options.filter((option) => !reference.includes(`| \`${option}\` |`))).toEqual([]);
  });

  it('names every member of a handler ctx (ToolContext, with what it inherits from TaskScope)', () => {
    const members = interfaceMembers(sdkSource('tool-context.ts'), 'ToolContext');
    expect(members).toEqual(
      expect.arrayContaining(['signal', 'spawn', 'all', 'race', 'checkpoint', 'step', 'commit', 'progress', 'fetch']),
    );
    expect(members.filter((member) => !new RegExp(`\`ctx\\.${member}\\b`).test(reference))).toEqual([]);
  });
});

describe('interfaceMembers', () => {
  it('reads properties, methods and generic methods, skips comments and nested types, and follows extends', () => {
    const source = `
      /** A base. */
      export interface Base {
        /** { fake: string } in a comment */
        readonly signal: AbortSignal;
        all<T>(branches: readonly ((scope: Base) => Promise<T>)[]): Promise<T[]>;
      }
      // interface Hidden { nope: string }
      export interface Child<DB = unknown> extends Base {
        readonly tenant: string;
        readonly nested?: { readonly inner: number };
        log(
          level: 'debug' | 'info',
          data: unknown,
        ): void;
        handler(input: unknown, ctx: Base): Promise<void>;
      }`;
    expect(interfaceMembers(source, 'Child')).toEqual(['tenant', 'nested', 'log', 'handler', 'signal', 'all']);
    expect(() => interfaceMembers(source, 'Hidden')).toThrow(/no interface Hidden/);
  });
});
