import { defineResource, defineResourceTemplate } from '@taskgate/sdk';
import { type CatalogContent, type ContentSet, contentToolName, publishedContent } from '@taskgate/tools';
import { describe, expect, it } from 'vitest';
import { ContentOffer } from './content-offer.ts';

// Which content tool serves a URI is told to the subscriptions held under the old one each time
// the catalog's content moves: a deploy that changes a module's declarations renames its tool.
const watch = () => () => {};
const version = (extra: boolean): CatalogContent => {
  const set: ContentSet = {
    resources: [
      defineResource({ uri: 'mod://watched', name: 'watched', read: () => [{ text: 'x' }], watch }),
      ...(extra ? [defineResource({ uri: 'mod://new', name: 'new', read: () => [{ text: 'y' }] })] : []),
    ],
    resourceTemplates: [
      defineResourceTemplate({ uriTemplate: 'mod://items/{id}', name: 'items', read: () => [], watch }),
    ],
  };
  const content = publishedContent('mod', set);
  return { tool: contentToolName('mod', content), fingerprint: content.module, spec: {} as never, content };
};

describe('ContentOffer retool', () => {
  it('names the content tool serving each URI after every rebuild, and none for what no module serves', () => {
    const v1 = version(false);
    const v2 = version(true);
    expect(v2.tool).not.toBe(v1.tool);
    let entries = [v1];
    const changes = new Set<() => void>();
    const told: ((tenantId: string, uri: string) => string | undefined)[] = [];
    const offer = new ContentOffer({
      local: [{ resources: [defineResource({ uri: 'here://local', name: 'local', read: () => [] })] }],
      catalog: {
        content: () => entries,
        onContentChange: (listener) => {
          changes.add(listener);
          return () => changes.delete(listener);
        },
      },
      remote: () => async () => ({ outcome: 'not-found' }),
      watch: () => () => () => {},
      retool: (toolOf) => told.push(toolOf),
    });
    const named = (toolOf: ((tenantId: string, uri: string) => string | undefined) | undefined) =>
      ['mod://watched', 'mod://items/7', 'here://local', 'nobody://x'].map((uri) => toolOf?.('t', uri));
    expect(named(told.at(-1))).toEqual([v1.tool, v1.tool, undefined, undefined]);
    entries = [v2];
    for (const listener of changes) listener();
    expect(named(told.at(-1))).toEqual([v2.tool, v2.tool, undefined, undefined]);
    offer.close();
  });
});
