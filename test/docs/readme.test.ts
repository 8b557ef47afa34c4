import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SETTINGS } from '../../apps/cli/src/config.ts';
import { USAGE } from '../../apps/cli/src/main.ts';
import { REPO_ROOT } from '../support/cli.ts';

const readme = readFileSync(path.join(REPO_ROOT, 'README.md'), 'utf8');
const configuration = readFileSync(path.join(REPO_ROOT, 'docs/reference/configuration.md'), 'utf8');
const cli = readFileSync(path.join(REPO_ROOT, 'docs/reference/cli.md'), 'utf8');
/** The README is a page a newcomer reads in minutes; the depth lives under docs/. */
const README_MAX_BYTES = 15 * 1024;
const ciScript = readFileSync(path.join(REPO_ROOT, '.ci/run'), 'utf8');
const manifest = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8'));

describe('README.md', () => {
  it('gives the two commands a newcomer needs', () => {
    expect(readme).toContain('npm ci && npm start');
    expect(readme).toContain('npm ci && npm test');
    expect(manifest.scripts.start).toBe('exec taskgate start');
    expect(manifest.scripts.test).toBe('vitest run');
  });

  it(`stays under ${README_MAX_BYTES} bytes`, () => {
    expect(Buffer.byteLength(readme, 'utf8')).toBeLessThanOrEqual(README_MAX_BYTES);
  });

  it('is what CI runs: the last command of .ci/run is the README test command', () => {
    const commands = ciScript
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line && !line.startsWith('#') && !line.startsWith('echo'));
    expect(commands.at(-1)).toBe('npm test');
    expect(ciScript).toContain('npm ci');
    expect(ciScript).toContain('export TEST_DATABASE_URL=');
  });

  it('declares the Node it needs and brings it', () => {
    expect(manifest.engines.node).toBe('>=22.12');
    expect(manifest.devDependencies.node).toMatch(/^\^2[2-9]\./);
    expect(readme).toContain('Node.js ≥ 22.12');
  });
});

describe('docs/reference/configuration.md', () => {
  it('documents every setting Taskgate reads, and no other', () => {
    const table = [...configuration.matchAll(/^\| `([A-Z_]+)` \|/gm)].map((match) => match[1]);
    expect(table.sort()).toEqual(Object.keys(SETTINGS).sort());
  });
});

describe('docs/reference/cli.md', () => {
  /** `migrate up`, `tasks get`, `version`, …: each command of the usage text, with its subcommand. */
  const commands = [...USAGE.matchAll(/^ {2}([a-z][a-z-]*)(?: ([a-z]+)(?:\|[a-z|]+)?)?(?= |$)/gm)].map((match) =>
    match[2] === undefined ? (match[1] as string) : `${match[1]} ${match[2]}`,
  );

  it('names every command the usage text offers', () => {
    expect(commands).toEqual(expect.arrayContaining(['start', 'migrate up', 'migrate plan', 'tasks get', 'version']));
    expect(commands.filter((command) => !cli.includes(`taskgate ${command}`))).toEqual([]);
  });
});
