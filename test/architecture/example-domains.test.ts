import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { errorRegistry } from '@taskgate/errors';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/cli.ts';

/**
 * The examples' business domains: the ledger's charges, accounts, inventory and SKUs. They belong
 * to examples/ledger (its tables, routes and error codes); the platform knows them only as "a tool
 * module", so a word of theirs in a platform source file means the boundary leaked.
 */
const DOMAIN = /\bcharg(e|es|ed|ing)\b|charge_account|\baccounts?\b|account_charges|inventor(y|ies)|\bskus?\b/i;

/** A path into examples/ inside a string literal: `'…examples/demo/…'`. */
const EXAMPLE_PATH = /['"`][^'"`]*\bexamples\/\w/;

function files(dir: string, keep: (name: string) => boolean): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : files(full, keep);
    return keep(entry.name) ? [full] : [];
  });
}

/** Every line of the platform's own source (tests excluded: they exercise the examples). */
function platformSources(): string[] {
  const roots = ['packages', 'apps'].flatMap((top) =>
    readdirSync(path.join(REPO_ROOT, top)).map((name) => path.join(REPO_ROOT, top, name, 'src')),
  );
  return roots.flatMap((root) => files(root, (name) => name.endsWith('.ts') && !name.endsWith('.test.ts')));
}

function mentions(file: string): string[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .flatMap((line, index) =>
      DOMAIN.test(line) ? [`${path.relative(REPO_ROOT, file)}:${index + 1}: ${line.trim()}`] : [],
    );
}

describe("the examples' domains stay in examples/", () => {
  it('no platform package or app names them', () => {
    expect(platformSources().flatMap(mentions)).toEqual([]);
  });

  it("no platform migration names them (the ledger's tables are its module's migrations)", () => {
    const migrations = files(path.join(REPO_ROOT, 'migrations'), (name) => name.endsWith('.sql'));
    expect(migrations.length).toBeGreaterThan(0);
    expect(migrations.flatMap(mentions)).toEqual([]);
  });

  it('no error registry entry names them', () => {
    const entries = Object.entries(errorRegistry).map(([code, definition]) => `${code}: ${definition.title}`);
    expect(entries.filter((entry) => DOMAIN.test(entry))).toEqual([]);
  });

  it('no platform source holds a path into examples/: the project declares its default modules', () => {
    // A quoted string with examples/<name> in it, outside comments (which may name an example).
    const paths = platformSources().flatMap((file) =>
      readFileSync(file, 'utf8')
        .split('\n')
        .flatMap((line, index) =>
          !/^\s*(\/\/|\*|\/\*)/.test(line) && EXAMPLE_PATH.test(line)
            ? [`${path.relative(REPO_ROOT, file)}:${index + 1}: ${line.trim()}`]
            : [],
        ),
    );
    expect(paths).toEqual([]);
    expect(EXAMPLE_PATH.test("new URL('../../../examples/demo/index.ts', import.meta.url)")).toBe(true);
    expect(EXAMPLE_PATH.test("'in a checkout, the demo modules under examples/; an installed CLI'")).toBe(false);
  });

  it('the pattern finds what it is meant to find', () => {
    const ledger = files(
      path.join(REPO_ROOT, 'examples/ledger'),
      (name) => name.endsWith('.ts') || name.endsWith('.sql'),
    );
    expect(ledger.flatMap(mentions).length).toBeGreaterThan(10);
    expect(DOMAIN.test('TG_SKU_NOT_FOUND: SKU not found')).toBe(true);
    expect(DOMAIN.test('discharges nothing; recharged')).toBe(false);
  });
});

describe("a module's own error codes", () => {
  it('are each documented in examples/README.md', async () => {
    const { errors } = await import('../../examples/ledger/index.ts');
    const readme = readFileSync(path.join(REPO_ROOT, 'examples/README.md'), 'utf8');
    for (const code of Object.keys(errors)) expect(readme).toContain(`| \`${code}\` |`);
  });
});
