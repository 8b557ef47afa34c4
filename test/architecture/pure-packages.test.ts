import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/cli.ts';

/**
 * Packages that decide rather than do: no database, no HTTP server, no Node I/O. They run in any
 * JavaScript runtime and are tested with plain unit tests and injected clocks.
 */
const PURE_PACKAGES = ['errors', 'protocol', 'reliability'];
const FORBIDDEN = /^(node:|pg$|pg-|pg\/|fastify|kysely|@electric-sql\/|fs$|net$|http$|https$|child_process$|pino)/;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [full] : [];
  });
}

function importsOf(file: string): string[] {
  const source = readFileSync(file, 'utf8');
  return [
    ...source.matchAll(/(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g),
  ].map((match) => (match[1] ?? match[2]) as string);
}

describe('pure packages', () => {
  for (const name of PURE_PACKAGES) {
    it(`packages/${name} imports no I/O module and depends on nothing`, () => {
      const root = path.join(REPO_ROOT, 'packages', name);
      const offending = sourceFiles(path.join(root, 'src')).flatMap((file) =>
        importsOf(file)
          .filter((specifier) => FORBIDDEN.test(specifier))
          .map((specifier) => `${path.relative(REPO_ROOT, file)} imports ${specifier}`),
      );
      expect(offending).toEqual([]);
      const manifest = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
      expect(manifest.dependencies ?? {}).toEqual({});
    });
  }

  it('the import scanner sees the imports it is meant to catch', () => {
    const sample = path.join(REPO_ROOT, 'packages/db/src/connection.ts');
    expect(importsOf(sample)).toContain('pg');
  });
});
