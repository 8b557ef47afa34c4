import { toolCatalogEntry } from '@taskgate/reliability';
import { defineTool } from '@taskgate/sdk';
import { describe, expect, it } from 'vitest';
import { type CatalogSource, CatalogTools } from './catalog-tools.ts';
import { ToolRegistry } from './tool-registry.ts';

/** A catalog whose listing the test sets; `set` bumps the version and tells the listeners. */
function fakeCatalog(entries: Record<string, unknown>[]) {
  let current = entries.map((definition) => toolCatalogEntry(definition));
  let version = 1;
  const listeners = new Set<() => void>();
  const source: CatalogSource = {
    entries: () => current,
    get version() {
      return String(version);
    },
    onChange: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
  return {
    source,
    set(next: Record<string, unknown>[]) {
      current = next.map((definition) => toolCatalogEntry(definition));
      version += 1;
      for (const listener of listeners) listener();
    },
  };
}

const spec = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  description: `does ${name}`,
  inputSchema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] },
  retry: 'safe',
  ...extra,
});

function logged() {
  const lines: { fields: Record<string, unknown>; message: string }[] = [];
  return {
    lines,
    logger: { warn: (fields: Record<string, unknown>, message: string) => lines.push({ fields, message }) },
  };
}

describe('CatalogTools', () => {
  it('offers what the catalog lists, checks arguments against it, and follows its changes', () => {
    const catalog = fakeCatalog([spec('b'), spec('a')]);
    const { logger } = logged();
    const tools = new CatalogTools(catalog.source, { logger });
    let changes = 0;
    tools.onChange(() => {
      changes += 1;
    });
    expect(tools.list().map((tool) => tool.name)).toEqual(['a', 'b']);
    expect(tools.check('a', { n: 1 })).toEqual({ ok: true });
    expect(tools.check('a', { n: 'x' })).toMatchObject({ ok: false, kind: 'invalid-arguments' });
    expect(tools.check('c', {})).toEqual({ ok: false, kind: 'unknown-tool' });
    expect(tools.fingerprint('a')).toBe(toolCatalogEntry(spec('a')).fingerprint);
    // No handler here: nothing runs in this process.
    expect(tools.local('a')).toBeUndefined();
    const list = tools.list();
    expect(tools.list()).toBe(list);

    catalog.set([spec('a', { inputSchema: { type: 'object' } }), spec('c')]);
    expect(changes).toBe(1);
    expect(tools.list().map((tool) => tool.name)).toEqual(['a', 'c']);
    expect(tools.check('a', { n: 'x' })).toEqual({ ok: true });
    expect(tools.check('b', {})).toEqual({ ok: false, kind: 'unknown-tool' });
  });

  it('leaves out a definition that defineTool would refuse or whose schema does not compile, and says so once', () => {
    const catalog = fakeCatalog([
      spec('fine'),
      spec('unsafe_inline', { retry: 'unsafe', inline: true }),
      spec('bad_schema', { inputSchema: { type: 'object', properties: { n: { type: 'nonsense' } } } }),
    ]);
    const { lines, logger } = logged();
    const tools = new CatalogTools(catalog.source, { logger });
    expect(tools.list().map((tool) => tool.name)).toEqual(['fine']);
    catalog.set([spec('fine'), spec('unsafe_inline', { retry: 'unsafe', inline: true }), spec('other')]);
    expect(tools.list().map((tool) => tool.name)).toEqual(['fine', 'other']);
    expect(lines.map((line) => line.fields.tool)).toEqual(['unsafe_inline', 'bad_schema']);
    expect(lines[0]?.message).toBe('a catalog definition cannot be offered; the tool is left out of tools/list');
  });

  it("runs this process's inline tools itself, with its own definition, even over the catalog's", () => {
    const handler = async () => ({ content: [] });
    const local = defineTool({
      ...spec('quick', { inline: true }),
      description: 'the local version',
      handler,
    } as never);
    const durable = defineTool({ ...spec('slow'), handler } as never);
    const catalog = fakeCatalog([spec('quick', { inline: true, description: 'a worker’s version' }), spec('other')]);
    const tools = new CatalogTools(catalog.source, {
      local: new ToolRegistry([local, durable] as never),
      logger: logged().logger,
    });
    // The local inline tool is offered and run here; a local durable tool is offered only if a
    // worker publishes it (none does here).
    expect(tools.list().map((tool) => [tool.name, tool.description])).toEqual([
      ['other', 'does other'],
      ['quick', 'the local version'],
    ]);
    expect(tools.local('quick')).toBe(local);
    expect(tools.local('slow')).toBeUndefined();
    expect(tools.fingerprint('quick')).toBe(toolCatalogEntry(local as never).fingerprint);
    expect(tools.check('quick', {})).toMatchObject({ ok: false, kind: 'invalid-arguments' });
  });
});
