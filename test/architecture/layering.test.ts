import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/cli.ts';

/**
 * The shape of the tree, as the import graph says it is: packages never reach into apps, nothing
 * imports itself round a loop (type imports count: a type cycle is a design cycle, whatever the
 * compiler erases), and the MCP server's folders point one way — transports → dispatch → core ←
 * methods ← revisions, with apps/api/src/mcp/core-assembly.ts the one place that sees them all.
 * Biome's noImportCycles (biome.json) says the same per file as it is edited; this test holds the
 * whole graph, across packages, and the layers, which no linter knows.
 */

const WORKSPACES = ['packages', 'apps'];

interface Workspace {
  readonly name: string;
  readonly dir: string;
  readonly exports: Readonly<Record<string, string>>;
}

function workspaces(): Workspace[] {
  return WORKSPACES.flatMap((group) =>
    readdirSync(path.join(REPO_ROOT, group)).map((entry) => {
      const dir = path.join(REPO_ROOT, group, entry);
      const manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
      const exports: Record<string, string> =
        typeof manifest.exports === 'string' ? { '.': manifest.exports } : (manifest.exports ?? {});
      return { name: manifest.name as string, dir, exports };
    }),
  );
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' || entry.name === 'dist' ? [] : sourceFiles(full);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') && !entry.name.endsWith('.d.ts')
      ? [full]
      : [];
  });
}

/** Every module a source names: static imports and re-exports (type-only included) and dynamic import(). */
function specifiersOf(source: string): string[] {
  const found = source.matchAll(
    /^\s*(?:import|export)\s[^'"]*?\sfrom\s+['"]([^'"]+)['"]|^\s*import\s+['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/gm,
  );
  return [...found].map((match) => (match[1] ?? match[2] ?? match[3]) as string);
}

/** The file a specifier names, or null for one outside the workspaces (a dependency, node:*). */
function resolverOf(spaces: readonly Workspace[]) {
  return (from: string, specifier: string): string | null => {
    if (specifier.startsWith('.')) return path.resolve(path.dirname(from), specifier);
    const space = spaces.find(
      (candidate) => specifier === candidate.name || specifier.startsWith(`${candidate.name}/`),
    );
    if (!space) return null;
    const subpath = `.${specifier.slice(space.name.length)}`;
    const target = space.exports[subpath];
    if (target === undefined) throw new Error(`${from}: ${specifier} is not among ${space.name}'s exports`);
    return path.resolve(space.dir, target);
  };
}

/** Strongly connected components of more than one file, or a file that imports itself: the cycles. */
function cyclesOf(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, counter);
    low.set(node, counter);
    counter += 1;
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!graph.has(next)) continue;
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node) as number, low.get(next) as number));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node) as number, index.get(next) as number));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop() as string;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1 || (graph.get(node) ?? []).includes(node)) cycles.push(component.sort());
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return cycles;
}

function importGraph(): Map<string, string[]> {
  const spaces = workspaces();
  const resolve = resolverOf(spaces);
  const graph = new Map<string, string[]>();
  for (const space of spaces) {
    for (const file of sourceFiles(path.join(space.dir, 'src'))) {
      const targets = specifiersOf(readFileSync(file, 'utf8'))
        .map((specifier) => resolve(file, specifier))
        .filter((target): target is string => target !== null);
      graph.set(path.relative(REPO_ROOT, file), [
        ...new Set(targets.map((target) => path.relative(REPO_ROOT, target))),
      ]);
    }
  }
  return graph;
}

/**
 * What each folder of apps/api/src/mcp may import besides itself. A transport frames bytes and
 * hands messages to the dispatcher; the dispatcher decides what a message means and asks the
 * core; the core routes to a revision's method table; methods are shared by revisions; a revision
 * folder holds what is its own. Within transports, http may use the stream connection (the
 * HTTP+SSE transport is one), never the other way round.
 */
const MCP = 'apps/api/src/mcp/';
const MCP_LAYERS: Readonly<Record<string, readonly string[]>> = {
  core: ['core'],
  dispatch: ['dispatch', 'core'],
  methods: ['methods', 'core'],
  revisions: ['revisions', 'methods', 'core'],
  transports: ['transports', 'dispatch', 'core'],
};

function mcpLayerOf(file: string): string | null {
  if (!file.startsWith(MCP)) return null;
  const parts = file.slice(MCP.length).split('/');
  return parts.length > 1 ? (parts[0] as string) : null;
}

describe('layering', () => {
  const graph = importGraph();

  it('reads every kind of import, and finds a cycle where there is one', () => {
    const source = [
      "import { a } from './a.ts';",
      "import type { B } from '../b.ts';",
      "export { c } from './c.ts';",
      "import './side-effect.ts';",
      "const d = await import('./d.ts');",
    ].join('\n');
    expect(specifiersOf(source)).toEqual(['./a.ts', '../b.ts', './c.ts', './side-effect.ts', './d.ts']);
    const looped = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a', 'd']],
      ['d', []],
      ['e', ['e']],
    ]);
    expect(cyclesOf(looped)).toEqual([['a', 'b', 'c'], ['e']]);
    expect(
      cyclesOf(
        new Map([
          ['a', ['b']],
          ['b', []],
        ]),
      ),
    ).toEqual([]);
  });

  it('sees the whole tree', () => {
    expect(graph.size).toBeGreaterThan(300);
    expect(graph.get('apps/api/src/mcp/core-assembly.ts')).toContain('apps/api/src/mcp/core/mcp-core.ts');
  });

  it('has no import cycle, type imports included, across packages and apps', () => {
    expect(cyclesOf(graph)).toEqual([]);
  });

  it('packages never import apps', () => {
    const found = [...graph].flatMap(([file, targets]) =>
      file.startsWith('packages/')
        ? targets.filter((target) => target.startsWith('apps/')).map((target) => `${file} imports ${target}`)
        : [],
    );
    expect(found).toEqual([]);
    for (const entry of readdirSync(path.join(REPO_ROOT, 'packages'))) {
      const manifest = JSON.parse(readFileSync(path.join(REPO_ROOT, 'packages', entry, 'package.json'), 'utf8'));
      const apps = Object.keys({ ...manifest.dependencies, ...manifest.peerDependencies }).filter((name) =>
        ['@taskgate/api', '@taskgate/cli', '@taskgate/worker', '@taskgate/relay'].includes(name),
      );
      expect(apps, `packages/${entry}/package.json`).toEqual([]);
    }
  });

  it('MCP folders point down: transports → dispatch → core ← methods ← revisions', () => {
    const found = [...graph].flatMap(([file, targets]) => {
      const layer = mcpLayerOf(file);
      if (layer === null) return [];
      const allowed = MCP_LAYERS[layer];
      if (allowed === undefined) return [`${file} is in no layer (${Object.keys(MCP_LAYERS).join(', ')})`];
      return targets.flatMap((target) => {
        const to = mcpLayerOf(target);
        if (target.startsWith(MCP) && to === null) return [`${file} imports ${target}, above every layer`];
        if (to !== null && !allowed.includes(to)) return [`${file} (${layer}) imports ${target} (${to})`];
        if (file.startsWith(`${MCP}transports/stream/`) && target.startsWith(`${MCP}transports/http/`)) {
          return [`${file} imports ${target}: stream connections know no HTTP`];
        }
        return [];
      });
    });
    expect(found).toEqual([]);
  });
});
