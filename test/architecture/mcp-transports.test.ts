import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/cli.ts';

/**
 * Transports turn bytes into messages and a closed stream or pipe into a cancel; what a message
 * means is decided once, by the dispatcher (apps/api/src/mcp/dispatch/dispatcher.ts): the era and
 * revision a request speaks, a handshake connection's initialize and ping, 2026-07-28's per-request
 * checks, the shape of an answer. A transport that imported one of these would be deciding it
 * again. (stdio-front.ts is the one exception by design: it answers a client's first messages
 * before the server, and with it the dispatcher, has loaded.)
 */
const TRANSPORTS_DIR = 'apps/api/src/mcp/transports';
const TRANSPORTS = readdirSync(path.join(REPO_ROOT, TRANSPORTS_DIR), { recursive: true, encoding: 'utf8' })
  .filter((file) => file.endsWith('.ts') && !file.endsWith('.test.ts') && !file.endsWith('stdio-front.ts'))
  .map((file) => `${TRANSPORTS_DIR}/${file}`);

/** Names that decide the protocol, wherever they are imported from. */
const DECIDERS = [
  'requestRevisionKind',
  'revisionKindOf',
  'checkMetaFields',
  'checkRequestMetadata',
  'negotiateHandshake',
  'initialize',
  'handshakeResult',
  'LATEST_PROTOCOL_VERSION',
  'HANDSHAKE_VERSIONS',
  'PER_REQUEST_VERSIONS',
  'SUPPORTED_PROTOCOL_VERSIONS',
  'revisionInfo',
  'batchRefusal',
  // A request runs through the dispatcher, which runs it through the request runner.
  'runRequest',
];

/** Each import of a source: the names it brings in and the module it names. */
function importsOf(source: string): { names: string[]; from: string }[] {
  return [...source.matchAll(/^import\s+(?:type\s+)?([\s\S]*?)\s+from\s+'([^']+)';/gm)].map((match) => ({
    names: [...(match[1] as string).matchAll(/(?:type\s+)?([A-Za-z_$][\w$]*)(?:\s+as\s+[\w$]+)?/g)].map(
      (name) => name[1] as string,
    ),
    from: match[2] as string,
  }));
}

describe('MCP transports', () => {
  it('the import reader finds names and modules, type imports included', () => {
    const source = "import { a, type B as C } from './x.ts';\nimport type { D } from '@y/z';\nimport e from 'e';";
    expect(importsOf(source)).toEqual([
      { names: ['a', 'B'], from: './x.ts' },
      { names: ['D'], from: '@y/z' },
      { names: ['e'], from: 'e' },
    ]);
  });

  it('are the files of the transports folder', () => {
    expect(TRANSPORTS).toContain(`${TRANSPORTS_DIR}/http/mcp-route.ts`);
    expect(TRANSPORTS).toContain(`${TRANSPORTS_DIR}/stream/stream-connection.ts`);
  });

  it('import nothing that decides what a message means, and no revision', () => {
    const found = TRANSPORTS.flatMap((file) =>
      importsOf(readFileSync(path.join(REPO_ROOT, file), 'utf8')).flatMap(({ names, from }) => [
        ...(from.includes('/revisions/') ? [`${file} imports ${from}`] : []),
        ...names.filter((name) => DECIDERS.includes(name)).map((name) => `${file} imports ${name} from ${from}`),
      ]),
    );
    expect(found).toEqual([]);
  });

  it('call no method of the core: every request goes through the dispatcher', () => {
    const found = TRANSPORTS.filter((file) =>
      /\bcore\.request\(/.test(readFileSync(path.join(REPO_ROOT, file), 'utf8')),
    );
    expect(found).toEqual([]);
  });
});
