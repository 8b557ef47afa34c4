import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/cli.ts';

const SDK = path.join(REPO_ROOT, 'packages/sdk');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [full] : [];
  });
}

/** Every import of a file, with whether it is type-only (erased: nothing is loaded at run time). */
function importsOf(file: string): { specifier: string; typeOnly: boolean }[] {
  const source = readFileSync(file, 'utf8');
  return [
    ...source.matchAll(/(import|export)\s+(type\s+)?[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g),
  ].map((match) => ({ specifier: (match[3] ?? match[4]) as string, typeOnly: match[2] !== undefined }));
}

describe('the tool SDK (packages/sdk)', () => {
  it('imports nothing from the platform, nothing of Node, and only types of kysely', () => {
    const offending = sourceFiles(path.join(SDK, 'src')).flatMap((file) =>
      importsOf(file)
        .filter(({ specifier, typeOnly }) => !specifier.startsWith('./') && !(specifier === 'kysely' && typeOnly))
        .map(({ specifier }) => `${path.relative(REPO_ROOT, file)} imports ${specifier}`),
    );
    expect(offending).toEqual([]);
  });

  it('has no dependencies: kysely is an optional peer, for the types of ctx.commit', () => {
    const manifest = JSON.parse(readFileSync(path.join(SDK, 'package.json'), 'utf8'));
    expect(manifest.dependencies ?? {}).toEqual({});
    expect(Object.keys(manifest.peerDependencies ?? {})).toEqual(['kysely']);
  });

  it('the scanner tells a type-only import from one that loads code', () => {
    const sample = path.join(REPO_ROOT, 'packages/sdk/src/tool-context.ts');
    expect(importsOf(sample)).toContainEqual({ specifier: 'kysely', typeOnly: true });
    expect(importsOf(path.join(REPO_ROOT, 'packages/db/src/connection.ts'))).toContainEqual({
      specifier: 'pg',
      typeOnly: false,
    });
  });
});
