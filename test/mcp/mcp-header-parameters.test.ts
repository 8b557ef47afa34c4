import http from 'node:http';
import { defineTool } from '@taskgate/sdk';
import { ToolRegistry } from '@taskgate/tools';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { diagnosticTools } from '../../examples/conformance/diagnostic-fixtures.ts';
import { useTestDatabase } from '../support/databases.ts';
import { perRequestMessage } from '../support/mcp-http.ts';
import { type Platform, serveApi, startPlatform } from '../support/task-platform.ts';

// x-mcp-header (2026-07-28 Streamable HTTP "Custom Headers from Tool Parameters"): a tools/call's
// Mcp-Param-* headers must carry the body's values, or it is 400 with -32020 before anything runs;
// a tool whose annotation breaks the spec's rules is refused when it is defined.
const database = useTestDatabase();
let platform: Platform;
let api: Awaited<ReturnType<typeof serveApi>>;
beforeAll(async () => {
  platform = await startPlatform(database.url, { tools: diagnosticTools });
  api = await serveApi(platform, database.url);
});
afterAll(async () => {
  await api.close();
  await platform.stop();
});

async function call(args: Record<string, unknown>, headers: Record<string, string>) {
  const request = perRequestMessage('tools/call', { name: 'test_custom_headers', arguments: args }, { id: 1, headers });
  const response = await fetch(api.mcpUrl, { method: 'POST', ...request });
  return {
    status: response.status,
    body: (await response.json()) as { result?: unknown; error?: { code: number; message: string } },
  };
}

describe('Mcp-Param-* headers', () => {
  it('lists the annotations as declared, and runs a call whose headers carry the body’s values', async () => {
    const ok = await call(
      { region: 'Hello, 世界', priority: 3, dryRun: true },
      {
        'mcp-param-region': '=?base64?SGVsbG8sIOS4lueVjA==?=',
        'Mcp-Param-Priority': '3.0',
        'mcp-param-dry-run': 'true',
      },
    );
    expect(ok.status).toBe(200);
    expect(ok.body.result).toMatchObject({ content: [{ text: expect.stringContaining('Hello, 世界') }] });
  });

  it('refuses a missing, different, malformed or unexpected header with 400 and -32020, running nothing', async () => {
    const cases: [Record<string, unknown>, Record<string, string>, string][] = [
      [{ region: 'eu' }, {}, 'Mcp-Param-Region header is required'],
      [{ region: 'eu' }, { 'mcp-param-region': 'us' }, "value 'us' does not match body value 'eu'"],
      [{ region: 'eu', priority: 2 }, { 'mcp-param-region': 'eu', 'mcp-param-priority': '3' }, 'does not match'],
      [{ region: 'Hello' }, { 'mcp-param-region': '=?base64?SGVsbG8?=' }, 'bad Base64'],
      [{ region: 'eu' }, { 'mcp-param-region': 'eu', 'mcp-param-dry-run': 'true' }, 'has no value'],
    ];
    // The same header twice (two header lines): Node would join them as "eu, eu", which the body says.
    const twice = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const body = JSON.stringify({
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: {
          name: 'test_custom_headers',
          arguments: { region: 'eu, eu' },
          _meta: {
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
            'io.modelcontextprotocol/clientCapabilities': {},
          },
        },
      });
      const outgoing = http.request(api.mcpUrl, { method: 'POST' }, (response) => {
        let text = '';
        response.on('data', (chunk: Buffer) => {
          text += chunk.toString();
        });
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }));
      });
      outgoing.on('error', reject);
      outgoing.setHeader('content-type', 'application/json');
      outgoing.setHeader('accept', 'application/json, text/event-stream');
      outgoing.setHeader('mcp-protocol-version', '2026-07-28');
      outgoing.setHeader('mcp-method', 'tools/call');
      outgoing.setHeader('mcp-name', 'test_custom_headers');
      outgoing.setHeader('mcp-param-region', ['eu', 'eu']);
      outgoing.end(body);
    });
    expect(twice.status).toBe(400);
    expect(JSON.parse(twice.body).error.message).toContain('more than once');
    for (const [args, headers, message] of cases) {
      const refused = await call(args, headers);
      expect(refused.status, message).toBe(400);
      expect(refused.body.error?.code).toBe(-32020);
      expect(refused.body.error?.message).toContain(message);
    }
  });

  it('refuses to define a tool whose annotation breaks the rules', () => {
    const tool = (property: Record<string, unknown>) =>
      defineTool({
        name: 'bad_headers',
        description: 'd',
        inputSchema: { type: 'object', properties: { p: property } },
        retry: 'safe',
        async handler() {
          return { content: [] };
        },
      });
    expect(() => new ToolRegistry([tool({ type: 'number', 'x-mcp-header': 'P' })])).toThrow(
      'tool bad_headers: inputSchema property p: x-mcp-header may only annotate a string, integer or boolean parameter',
    );
    expect(() => new ToolRegistry([tool({ type: 'string', 'x-mcp-header': 'with space' })])).toThrow('token');
  });
});
