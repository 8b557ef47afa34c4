import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/cli.ts';

/**
 * One place per protocol revision: a version string appears in code only inside its folder
 * (`revisions/<version>/`, in packages/protocol and apps/api). Everything else asks the registry,
 * so serving a new revision is a folder and a registry entry, not a search through the
 * transports. Comments may cite a revision's spec page; string literals and templates may not.
 */
const TREES = ['apps', 'packages'];
const DATE = /\b20\d{2}-\d{2}-\d{2}\b/;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' || entry.name === 'dist' ? [] : sourceFiles(full);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [full] : [];
  });
}

/** The string literals and templates of a TypeScript source, with their line numbers; comments skipped. */
function stringsOf(source: string): { line: number; text: string }[] {
  const found: { line: number; text: string }[] = [];
  let line = 1;
  let index = 0;
  while (index < source.length) {
    const char = source[index] as string;
    const next = source[index + 1];
    if (char === '\n') line += 1;
    if (char === '/' && next === '/') {
      const end = source.indexOf('\n', index);
      index = end === -1 ? source.length : end;
      continue;
    }
    if (char === '/' && next === '*') {
      const end = source.indexOf('*/', index + 2);
      const stop = end === -1 ? source.length : end + 2;
      line += source.slice(index, stop).split('\n').length - 1;
      index = stop;
      continue;
    }
    if (char === "'" || char === '"' || char === '`') {
      const start = line;
      let text = '';
      index += 1;
      while (index < source.length && source[index] !== char) {
        if (source[index] === '\\') {
          text += source.slice(index, index + 2);
          index += 2;
          continue;
        }
        if (source[index] === '\n') line += 1;
        text += source[index];
        index += 1;
      }
      found.push({ line: start, text });
    }
    index += 1;
  }
  return found;
}

describe('revision names', () => {
  it('the scanner finds literals and templates, and skips comments', () => {
    const placeholder = ['$', "{'y'}"].join('');
    const source = `// 2025-11-25 cited\n/* 2024-11-05\n */ const a = '2025-06-18';\nconst b = \`x ${placeholder} 2026-07-28\`;`;
    expect(stringsOf(source).filter((string) => DATE.test(string.text))).toEqual([
      { line: 3, text: '2025-06-18' },
      { line: 4, text: `x ${placeholder} 2026-07-28` },
    ]);
  });

  it('appear in code only inside revisions/<version>/ folders', () => {
    const offending = TREES.flatMap((tree) => sourceFiles(path.join(REPO_ROOT, tree)))
      .filter((file) => !file.split(path.sep).includes('revisions'))
      .flatMap((file) =>
        stringsOf(readFileSync(file, 'utf8'))
          .filter((string) => DATE.test(string.text))
          .map((string) => `${path.relative(REPO_ROOT, file)}:${string.line}: ${string.text}`),
      );
    expect(offending).toEqual([]);
  });

  it('a revision folder names no other revision', () => {
    const folders = ['packages/protocol/src/revisions', 'apps/api/src/mcp/revisions'].flatMap((root) =>
      readdirSync(path.join(REPO_ROOT, root), { withFileTypes: true })
        .filter((entry) => entry.isDirectory() && DATE.test(entry.name))
        .map((entry) => path.join(root, entry.name)),
    );
    expect(folders.length).toBeGreaterThanOrEqual(9);
    const versions = new Set(folders.map((folder) => path.basename(folder)));
    const wrong = folders.flatMap((folder) =>
      sourceFiles(path.join(REPO_ROOT, folder)).flatMap((file) =>
        stringsOf(readFileSync(file, 'utf8'))
          .flatMap((string) => [...string.text.matchAll(/\b20\d{2}-\d{2}-\d{2}\b/g)].map((match) => match[0]))
          // Another revision's version; a date that is no revision (an era's cutoff) is the folder's own.
          .filter((version) => versions.has(version) && version !== path.basename(folder))
          .map((version) => `${path.relative(REPO_ROOT, file)} names ${version}`),
      ),
    );
    expect(wrong).toEqual([]);
  });
});
