import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/cli.ts';
import { headingSlugs, markdownLinks } from './markdown.ts';

/** README.md and every Markdown file under docs/, as paths relative to the repository. */
function documents(): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(path.join(REPO_ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
      const relative = path.join(dir, entry.name);
      if (entry.isDirectory()) return walk(relative);
      return entry.name.endsWith('.md') ? [relative] : [];
    });
  return ['README.md', ...walk('docs')];
}

const slugsOf = new Map<string, Set<string>>();
function slugs(file: string): Set<string> {
  let known = slugsOf.get(file);
  if (!known) {
    known = headingSlugs(readFileSync(file, 'utf8'));
    slugsOf.set(file, known);
  }
  return known;
}

/** What is wrong with one link of `from`, or null when its file (and its anchor) exist. */
function brokenLink(from: string, target: string): string | null {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return null; // https:, mailto: — not a file of this repository
  const [file = '', anchor] = target.split('#', 2);
  const resolved =
    file === '' ? path.join(REPO_ROOT, from) : path.resolve(path.dirname(path.join(REPO_ROOT, from)), file);
  if (!existsSync(resolved)) return `${from}: ${target} names no file`;
  if (anchor === undefined) return null;
  if (!statSync(resolved).isFile() || !resolved.endsWith('.md'))
    return `${from}: ${target} has an anchor into no Markdown file`;
  return slugs(resolved).has(anchor)
    ? null
    : `${from}: ${target} names no heading of ${path.relative(REPO_ROOT, resolved)}`;
}

describe('links in README.md and docs/', () => {
  it('resolve to files that exist, and anchors to headings of their target', () => {
    const broken = documents().flatMap((from) =>
      markdownLinks(readFileSync(path.join(REPO_ROOT, from), 'utf8')).flatMap((target) => {
        const problem = brokenLink(from, target);
        return problem === null ? [] : [problem];
      }),
    );
    expect(broken).toEqual([]);
  });

  it('are found in the text, and checked: a missing file and a missing heading are both reported', () => {
    const text = '# One\n\n[a](#one) [b](missing.md) `[c](x.md)`\n\n```\n[d](y.md)\n```\n![e](#two)\n';
    expect(markdownLinks(text)).toEqual(['#one', 'missing.md', '#two']);
    expect(brokenLink('README.md', 'missing.md')).toMatch(/names no file/);
    expect(brokenLink('README.md', '#no-such-heading')).toMatch(/names no heading/);
    expect(brokenLink('README.md', '#two-commands')).toBeNull();
  });
});

describe("GitHub's heading slugs", () => {
  it('lowercase, turn spaces into hyphens, drop punctuation, and number repeats', () => {
    const text = [
      '# The operations console (`/ui`)',
      '## Mutations, idempotency keys and the ledger',
      '## MCP over Streamable HTTP (revision 2026-07-28)',
      '### The client’s API',
      '## Repeat',
      '## Repeat',
      '```',
      '# not a heading',
      '```',
    ].join('\n');
    expect([...headingSlugs(text)]).toEqual([
      'the-operations-console-ui',
      'mutations-idempotency-keys-and-the-ledger',
      'mcp-over-streamable-http-revision-2026-07-28',
      'the-clients-api',
      'repeat',
      'repeat-1',
    ]);
  });
});
