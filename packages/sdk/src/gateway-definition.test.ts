import { describe, expect, it } from 'vitest';
import { defineGateway, gatewayDefinitionProblem } from './gateway-definition.ts';

const good = { name: 'everything', prefix: 'ev_', stdio: { command: 'npx', args: ['-y', 'server'] } };

describe('defineGateway', () => {
  it('accepts a good declaration as it is', () => {
    const gateway = {
      ...good,
      defaults: { retry: 'unsafe' as const },
      tools: { echo: { retry: 'safe' as const, timeouts: { maxMs: 1_000 } } },
    };
    expect(defineGateway(gateway)).toBe(gateway);
    const remote = {
      name: 'remote',
      prefix: 'r_',
      http: { url: 'https://mcp.example.com/mcp', headers: { 'X-Api-Key': 'k' }, bearerToken: 'abc.def' },
    };
    expect(gatewayDefinitionProblem(remote)).toBeNull();
  });

  it('says what is wrong, naming the field', () => {
    const cases: [unknown, string][] = [
      [null, 'must be an object'],
      [{ ...good, name: 'Bad Name' }, 'must be 1-64 of a-z 0-9 _ -'],
      [{ ...good, prefix: 'a b' }, 'prefix must be a string'],
      [{ ...good, prefix: 5 }, 'prefix must be a string'],
      [{ ...good, prefix: 'Taskgate.x_' }, 'prefix must not begin taskgate.'],
      [{ name: 'x', prefix: '' }, 'give exactly one of stdio'],
      [{ ...good, http: { url: 'http://127.0.0.1:1/mcp' } }, 'give exactly one of stdio'],
      [{ ...good, stdio: 'npx' }, 'stdio must be an object'],
      [{ name: 'x', prefix: '', http: 'http://x' }, 'http must be an object'],
      [{ name: 'x', prefix: '', http: { url: 'ftp://x/mcp' } }, 'http.url must be an absolute http://'],
      [{ name: 'x', prefix: '', http: { url: '/mcp' } }, 'http.url must be an absolute http://'],
      [{ name: 'x', prefix: '', http: { url: 'http://u:p@x/mcp' } }, 'must not carry a user or password'],
      [
        { name: 'x', prefix: '', http: { url: 'http://x/mcp', headers: { 'X-Key': 'a\r\nInjected: 1' } } },
        'http.headers.X-Key must be a string of Latin-1 without CR, LF or NUL',
      ],
      [{ name: 'x', prefix: '', http: { url: 'http://x/mcp', headers: { 'a b': 'v' } } }, 'valid header name'],
      [{ name: 'x', prefix: '', http: { url: 'http://x/mcp', bearerToken: 5 } }, 'http.bearerToken must be'],
      [
        { name: 'x', prefix: '', http: { url: 'http://x/mcp', bearer_token: 't' } },
        'http has an unknown key "bearer_token"',
      ],
      [{ ...good, stdio: { command: 'npx', argv: [] } }, 'stdio has an unknown key "argv"'],
      [{ ...good, prefixes: 'x' }, 'unknown key "prefixes"'],
      [{ ...good, defaults: { retries: 'safe' } }, 'defaults has an unknown key "retries"'],
      [{ ...good, defaults: { timeouts: { max: 5 } } }, 'defaults.timeouts has an unknown key "max"'],
      [
        { name: 'x', prefix: '', http: { url: 'http://x/mcp', headers: { 'Mcp-Session-Id': 's' } } },
        'http.headers.Mcp-Session-Id is set by the transport itself',
      ],
      [
        { name: 'x', prefix: '', http: { url: 'http://x/mcp', headers: { 'Content-Length': '5' } } },
        'is set by the transport itself',
      ],
      [
        { name: 'x', prefix: '', http: { url: 'http://x/mcp', headers: { 'X-Key': 'ключ' } } },
        'must be a string of Latin-1',
      ],
      [{ name: 'x', prefix: '', http: { url: 'http://x/mcp', bearerToken: 'a b' } }, 'http.bearerToken must be'],
      [
        { name: 'x', prefix: '', http: { url: 'http://x/mcp', bearerToken: 't', headers: { authorization: 'x' } } },
        'give the token once',
      ],
      [{ ...good, stdio: { command: '' } }, 'stdio.command must be a non-empty string'],
      [{ ...good, stdio: { command: 'a\u0000b' } }, 'stdio.command must be a non-empty string without NUL'],
      [{ ...good, stdio: { command: 'npx', args: 'server' } }, 'stdio.args must be an array of strings'],
      [{ ...good, stdio: { command: 'npx', env: { TOKEN: 5 } } }, 'stdio.env.TOKEN must be a string'],
      [{ ...good, stdio: { command: 'npx', env: { 'A=B': 'x' } } }, 'under a name without = or NUL'],
      [{ ...good, defaults: { retry: 'sometimes' } }, 'defaults.retry must be "safe", "conditional" or "unsafe"'],
      [
        { ...good, tools: { echo: { timeouts: { maxMs: 0 } } } },
        'tools.echo.timeouts.maxMs must be a positive integer',
      ],
      [
        { ...good, tools: { echo: { timeouts: { maxMs: true } } } },
        'tools.echo.timeouts.maxMs must be a positive integer',
      ],
      [{ ...good, tools: { echo: { taskSupport: 'always' } } }, 'tools.echo.taskSupport must be'],
      [{ ...good, connectTimeoutMs: '10s' }, 'connectTimeoutMs must be a positive integer'],
    ];
    for (const [definition, message] of cases) expect(gatewayDefinitionProblem(definition)).toContain(message);
    expect(() => defineGateway({ ...good, prefix: 'a b' })).toThrow(TypeError);
  });
});
