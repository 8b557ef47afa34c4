import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { gatewaysFileModule } from './gateways-file.ts';

async function fileWith(text: string): Promise<string> {
  const file = path.join(await mkdtemp(path.join(tmpdir(), 'tg-gateways-file-')), 'gateways.json');
  await writeFile(file, text);
  return file;
}

describe('TASKGATE_GATEWAYS', () => {
  it('reads the declarations, with {"env": NAME} values from the environment', async () => {
    const file = await fileWith(
      JSON.stringify({
        gateways: [
          {
            name: 'remote',
            prefix: 'r_',
            http: {
              url: 'https://mcp.example.com/mcp',
              bearerToken: { env: 'REMOTE_TOKEN' },
              headers: { 'X-Key': { env: 'KEY' }, 'X-Literal': '{"env": "KEY"} stays as written' },
            },
            defaults: { retry: 'unsafe' },
          },
          {
            name: 'local',
            prefix: 'l_',
            stdio: { command: 'node', args: ['server.js'], env: { A: { env: 'A' }, B: 'b' } },
          },
        ],
      }),
    );
    const module = await gatewaysFileModule(file, { REMOTE_TOKEN: 'secret-token', KEY: 'k', A: 'a' });
    expect(module).toMatchObject({ name: 'gateways-file', file, tools: [] });
    expect(module.gateways).toEqual([
      {
        name: 'remote',
        prefix: 'r_',
        http: {
          url: 'https://mcp.example.com/mcp',
          bearerToken: 'secret-token',
          headers: { 'X-Key': 'k', 'X-Literal': '{"env": "KEY"} stays as written' },
        },
        defaults: { retry: 'unsafe' },
      },
      { name: 'local', prefix: 'l_', stdio: { command: 'node', args: ['server.js'], env: { A: 'a', B: 'b' } } },
    ]);
  });

  it("reads examples/gateway/gateways.json, the example's declaration as a file", async () => {
    const file = fileURLToPath(new URL('../../../examples/gateway/gateways.json', import.meta.url));
    const module = await gatewaysFileModule(file, {});
    expect(module.gateways?.map((gateway) => [gateway.name, gateway.prefix])).toEqual([['everything', 'ev_']]);
  });

  it('names the file, the entry and what is wrong', async () => {
    const cases: [string, string][] = [
      ['not json', 'is not JSON'],
      ['[]', 'must be an object whose "gateways" is an array'],
      ['{"gateways": {}}', 'must be an object whose "gateways" is an array'],
      ['{"gateways": [], "extra": 1}', 'has unknown keys: extra'],
      ['{"gateways": [{"name": "x", "prefix": "x_"}]}', 'gateways[0]: gateway x: give exactly one of stdio'],
      [
        '{"gateways": [{"name": "x", "prefix": "", "http": {"url": "http://h/mcp"}}, {"name": "x", "prefix": "y", "http": {"url": "http://h/mcp"}}]}',
        'gateways[1]: the name x is declared twice',
      ],
      [
        '{"gateways": [{"name": "x", "prefix": "", "http": {"url": "http://h/mcp", "bearerToken": {"env": "NOPE"}}}]}',
        'gateways[0] reads the environment variable NOPE, which is not set',
      ],
      [
        '{"gateways": [{"name": "x", "prefix": "", "http": {"url": "http://h/mcp", "bearerToken": {"env": "constructor"}}}]}',
        'gateways[0] reads the environment variable constructor, which is not set',
      ],
      [
        '{"gateways": [{"name": "x", "prefix": "", "http": {"url": "http://h/mcp", "bearerToken": {"env": "A-B"}}}]}',
        'gateways[0]: gateway x: http.bearerToken must be',
      ],
      [
        '{"gateways": [{"name": "x", "prefix": "", "http": {"url": "http://h/mcp", "bearerToken": true}}]}',
        'gateways[0]: gateway x: http.bearerToken must be',
      ],
    ];
    for (const [text, message] of cases) {
      const file = await fileWith(text);
      await expect(gatewaysFileModule(file, {})).rejects.toMatchObject({
        code: 'TG_CONFIG_INVALID',
        message: expect.stringContaining(`TASKGATE_GATEWAYS ${file}: ${message}`),
      });
    }
    await expect(gatewaysFileModule('/no/such/gateways.json', {})).rejects.toMatchObject({
      message: 'TASKGATE_GATEWAYS /no/such/gateways.json: cannot be read (ENOENT)',
    });
  });
});
