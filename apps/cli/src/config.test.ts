import { isTaskgateError } from '@taskgate/errors';
import { describe, expect, it } from 'vitest';
import { isLoopbackHost, loadConfig, SETTINGS } from './config.ts';
import { toolModulesOf } from './tool-modules.ts';

const TOKEN = 'a'.repeat(24);

function problems(env: Record<string, string>): { field: string; message: string }[] {
  try {
    loadConfig(env, '/srv/taskgate');
  } catch (error) {
    expect(isTaskgateError(error, 'TG_CONFIG_INVALID')).toBe(true);
    expect((error as Error).message).not.toContain('\n');
    return (error as { details: { problems: { field: string; message: string }[] } }).details.problems;
  }
  throw new Error('expected the configuration to be refused');
}

describe('loadConfig', () => {
  it('defaults to the embedded database on 127.0.0.1:8080 with data in ./.taskgate', () => {
    const { config, warnings } = loadConfig({}, '/srv/taskgate');
    expect(config).toMatchObject({
      databaseUrl: null,
      host: '127.0.0.1',
      port: 8080,
      dataDir: '/srv/taskgate/.taskgate',
      logLevel: 'info',
      allowedOrigins: [],
      shutdownGraceMs: 3000,
      workerConcurrency: 32,
      idempotencyRetentionMs: 86_400_000,
      outboxRetentionMs: 604_800_000,
      maxCallMs: 86_400_000,
      maxIdleMs: null,
      mcpSseAfterMs: 1_000,
      mcpTaskAfterMs: 500,
      requestTimeoutMs: 30_000,
    });
    expect(config.tokens.size).toBe(0);
    expect(warnings).toEqual([]);
  });

  it('reads every setting', () => {
    const { config } = loadConfig(
      {
        DATABASE_URL: 'postgres://u:p@db.internal:5433/tg',
        HOST: '0.0.0.0',
        PORT: '9000',
        TASKGATE_TOKENS: `${TOKEN}:acme, ${'b'.repeat(20)}:globex`,
        TASKGATE_DATA_DIR: '/var/lib/taskgate',
        TASKGATE_ALLOWED_ORIGINS: 'https://app.example.com, http://localhost:3000',
        TASKGATE_SHUTDOWN_GRACE_MS: '10000',
        TASKGATE_WORKER_CONCURRENCY: '64',
        TASKGATE_IDEMPOTENCY_RETENTION_MS: '3600000',
        TASKGATE_MAX_CALL_MS: '600000',
        TASKGATE_MAX_IDLE_MS: '30000',
        TASKGATE_MCP_SSE_AFTER_MS: '250',
        TASKGATE_MCP_TASK_AFTER_MS: '2000',
        TASKGATE_REQUEST_TIMEOUT_MS: '5000',
        LOG_LEVEL: 'DEBUG',
      },
      '/srv',
    );
    expect(config.databaseUrl).toBe('postgres://u:p@db.internal:5433/tg');
    expect(config.port).toBe(9000);
    expect([...config.tokens]).toEqual([
      [TOKEN, 'acme'],
      ['b'.repeat(20), 'globex'],
    ]);
    expect(config.dataDir).toBe('/var/lib/taskgate');
    expect(config.allowedOrigins).toEqual(['https://app.example.com', 'http://localhost:3000']);
    expect(config.shutdownGraceMs).toBe(10000);
    expect(config.workerConcurrency).toBe(64);
    expect(config.idempotencyRetentionMs).toBe(3_600_000);
    expect([config.maxCallMs, config.maxIdleMs]).toEqual([600_000, 30_000]);
    expect(config.mcpSseAfterMs).toBe(250);
    expect(config.mcpTaskAfterMs).toBe(2000);
    expect(config.requestTimeoutMs).toBe(5000);
    expect(config.logLevel).toBe('debug');
  });

  it('reads per-tool concurrency and the catalog window, with their defaults', () => {
    const defaults = loadConfig({}, '/srv').config;
    expect([defaults.toolConcurrency.size, defaults.catalogWindowMs]).toEqual([0, 30_000]);
    const { config } = loadConfig(
      { TASKGATE_TOOL_CONCURRENCY: ' slow_compute=4, charge_account = 16 ,', TASKGATE_CATALOG_WINDOW_MS: '5000' },
      '/srv',
    );
    expect([...config.toolConcurrency]).toEqual([
      ['slow_compute', 4],
      ['charge_account', 16],
    ]);
    expect(config.catalogWindowMs).toBe(5_000);
  });

  it('names TASKGATE_TOOL_CONCURRENCY and the entry in each problem', () => {
    expect(problems({ TASKGATE_TOOL_CONCURRENCY: 'slow_compute,greet=0,a b=2,greet=2000,x=1,x=2' })).toEqual([
      {
        field: 'TASKGATE_TOOL_CONCURRENCY',
        message: 'entry 1 ("slow_compute") must look like tool=n, with a tool name of 1-128 of A-Z a-z 0-9 _ . -',
      },
      {
        field: 'TASKGATE_TOOL_CONCURRENCY',
        message: 'entry 2 ("greet=0") must give greet a concurrency from 1 to 1024',
      },
      {
        field: 'TASKGATE_TOOL_CONCURRENCY',
        message: 'entry 3 ("a b=2") must look like tool=n, with a tool name of 1-128 of A-Z a-z 0-9 _ . -',
      },
      {
        field: 'TASKGATE_TOOL_CONCURRENCY',
        message: 'entry 4 ("greet=2000") must give greet a concurrency from 1 to 1024',
      },
      { field: 'TASKGATE_TOOL_CONCURRENCY', message: 'entry 6 ("x=2") names x again' },
    ]);
    expect(problems({ TASKGATE_CATALOG_WINDOW_MS: '-1' })).toEqual([
      { field: 'TASKGATE_CATALOG_WINDOW_MS', message: 'must be an integer from 0 to 86400000 (got "-1")' },
    ]);
  });

  it('TASKGATE_TOOLS=none loads no module, and cannot be combined with modules', async () => {
    const { config } = loadConfig({ TASKGATE_TOOLS: 'none', TASKGATE_CONFORMANCE: '1' }, '/srv');
    expect(await toolModulesOf([], config, '/srv')).toEqual([]);
    expect(problems({ TASKGATE_TOOLS: 'none, ./tools.ts' })).toEqual([
      { field: 'TASKGATE_TOOLS', message: 'none loads no module, so it cannot be combined with modules' },
    ]);
  });

  it('offers the conformance tools only with TASKGATE_CONFORMANCE=1, and names any other value', async () => {
    const names = async (env: Record<string, string>) =>
      (await toolModulesOf([], loadConfig(env, '/srv').config, '/srv')).flatMap((module) =>
        module.tools.map((tool) => tool.name),
      );
    expect(await names({})).not.toContain('confirm_delete');
    expect(await names({ TASKGATE_CONFORMANCE: '0' })).not.toContain('confirm_delete');
    expect(await names({ TASKGATE_CONFORMANCE: '1' })).toEqual(
      expect.arrayContaining(['greet', 'confirm_delete', 'multi_input', 'test_tool_with_task']),
    );
    expect(problems({ TASKGATE_CONFORMANCE: 'yes' }).map((p) => p.field)).toEqual(['TASKGATE_CONFORMANCE']);
  });

  it('reads TASKGATE_TOOLS as a comma list of modules, and serves the demo modules without it', async () => {
    expect(loadConfig({ TASKGATE_TOOLS: ' ./a.ts, pkg-b ,,' }, '/srv').config.toolModules).toEqual(['./a.ts', 'pkg-b']);
    expect(problems({ TASKGATE_TOOLS: ' , ' }).map((p) => p.field)).toEqual(['TASKGATE_TOOLS']);
    const modules = await toolModulesOf([], loadConfig({}, '/srv').config, '/srv');
    expect(modules.map((module) => module.name)).toEqual(['demo', 'ledger']);
  });

  it('describes the demo modules as the default of TASKGATE_TOOLS in a checkout only', () => {
    // An installed @taskgate/cli has no examples/ beside it (tool-modules.ts, examplesPresent).
    expect(SETTINGS.TASKGATE_TOOLS).toMatch(
      /default: unset, which in a checkout loads the demo modules under examples\/; an installed CLI loads none\)$/,
    );
  });

  it('names TASKGATE_IDEMPOTENCY_RETENTION_MS when it is shorter than a minute or not a number', () => {
    for (const retention of ['59999', 'a day']) {
      expect(problems({ TASKGATE_IDEMPOTENCY_RETENTION_MS: retention }).map((p) => p.field)).toEqual([
        'TASKGATE_IDEMPOTENCY_RETENTION_MS',
      ]);
    }
  });

  it('names TASKGATE_REQUEST_TIMEOUT_MS when it is 0 (no bound), under 100 ms or not a number', () => {
    for (const timeout of ['0', '99', '3600001', '30s', '1e4']) {
      expect(problems({ TASKGATE_REQUEST_TIMEOUT_MS: timeout })).toEqual([
        { field: 'TASKGATE_REQUEST_TIMEOUT_MS', message: `must be an integer from 100 to 3600000 (got "${timeout}")` },
      ]);
    }
  });

  it('names PORT when it is not a port number', () => {
    for (const port of ['abc', '-1', '65536', '80.5', '0x50']) {
      expect(problems({ PORT: port })).toEqual([
        { field: 'PORT', message: `must be an integer from 0 to 65535 (got "${port}")` },
      ]);
    }
    expect(loadConfig({ PORT: '0' }, '/').config.port).toBe(0);
  });

  it('serves no health probe unless TASKGATE_HEALTH_PORT is set, and names it when it is not a port', () => {
    expect(loadConfig({}, '/').config.healthPort).toBeNull();
    expect(loadConfig({ TASKGATE_HEALTH_PORT: '9090' }, '/').config.healthPort).toBe(9090);
    expect(loadConfig({ TASKGATE_HEALTH_PORT: '0' }, '/').config.healthPort).toBe(0);
    expect(problems({ TASKGATE_HEALTH_PORT: 'http' })).toEqual([
      { field: 'TASKGATE_HEALTH_PORT', message: 'must be an integer from 0 to 65535 (got "http")' },
    ]);
  });

  it('names DATABASE_URL when it is malformed, without echoing it', () => {
    expect(problems({ DATABASE_URL: 'not a url' })[0]?.field).toBe('DATABASE_URL');
    expect(problems({ DATABASE_URL: 'mysql://root:secret@db/x' })[0]).toEqual({
      field: 'DATABASE_URL',
      message: 'must use the postgres:// or postgresql:// scheme (got mysql://)',
    });
    expect(problems({ DATABASE_URL: 'postgres:///nohost' })[0]?.message).toContain('has no host');
  });

  it('collects every problem into one line', () => {
    try {
      loadConfig({ PORT: 'x', LOG_LEVEL: 'loud', HOST: 'bad host!' }, '/');
      expect.unreachable();
    } catch (error) {
      expect((error as Error).message).toBe(
        'invalid configuration: HOST must be an IP address or a hostname (got "bad host!"); ' +
          'PORT must be an integer from 0 to 65535 (got "x"); ' +
          'LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent (got "loud")',
      );
    }
  });

  it('refuses malformed, weak or repeated tokens without printing them', () => {
    const secret = 'short-secret';
    const found = problems({
      TASKGATE_TOKENS: `${secret}:acme,nocolon,${TOKEN}:bad tenant!,${TOKEN}:acme,${TOKEN}:acme`,
    });
    expect(found.map((p) => p.message)).toEqual([
      'entry 1 has a token shorter than 16 characters',
      'entry 2 must look like token:tenant',
      "entry 3 has an invalid tenant (letters, digits, '.', '_', '-'; at most 63)",
      'entry 5 repeats a token already given',
    ]);
    expect(JSON.stringify(found)).not.toContain(secret);
  });

  it('takes operator tokens, refusing weak, repeated, tenant-shaped or shared ones without printing them', () => {
    const operator = 'o'.repeat(24);
    expect([...loadConfig({ TASKGATE_OPERATOR_TOKENS: ` ${operator} ,` }, '/').config.operatorTokens]).toEqual([
      operator,
    ]);
    const secret = 'short-secret';
    const found = problems({
      TASKGATE_TOKENS: `${TOKEN}:acme`,
      TASKGATE_OPERATOR_TOKENS: `${secret},${operator}:acme,${TOKEN},${operator},${operator},has space in it ok`,
      TASKGATE_METRICS_TOKEN: operator,
    });
    expect(found.map((p) => `${p.field}: ${p.message}`)).toEqual([
      'TASKGATE_OPERATOR_TOKENS: entry 1 must be 16+ characters without spaces',
      "TASKGATE_OPERATOR_TOKENS: entry 2 has a ':' (a tenant's token:tenant goes in TASKGATE_TOKENS)",
      "TASKGATE_OPERATOR_TOKENS: entry 3 is also a tenant's token in TASKGATE_TOKENS",
      'TASKGATE_OPERATOR_TOKENS: entry 5 repeats a token already given',
      'TASKGATE_OPERATOR_TOKENS: entry 6 must be 16+ characters without spaces',
      'TASKGATE_METRICS_TOKEN: must not be one of the tokens in TASKGATE_TOKENS or TASKGATE_OPERATOR_TOKENS',
    ]);
    expect(JSON.stringify(found)).not.toContain(secret);
    expect(JSON.stringify(found)).not.toContain(operator);
    // An operator token alone closes the server: it may bind beyond loopback.
    expect(loadConfig({ HOST: '0.0.0.0', TASKGATE_OPERATOR_TOKENS: operator }, '/').config.operatorTokens.size).toBe(1);
  });

  it('requires tokens when binding beyond loopback', () => {
    expect(problems({ HOST: '0.0.0.0' })).toEqual([
      {
        field: 'TASKGATE_TOKENS',
        message:
          '(or TASKGATE_OAUTH_ISSUER) must be set when HOST is not a loopback address (HOST=0.0.0.0); unauthenticated mode is loopback-only',
      },
    ]);
    expect(loadConfig({ HOST: '::1' }, '/').config.host).toBe('::1');
    expect(loadConfig({ HOST: '0.0.0.0', TASKGATE_TOKENS: `${TOKEN}:acme` }, '/').config.tokens.size).toBe(1);
  });

  it('refuses origins that are not bare origins', () => {
    expect(
      problems({ TASKGATE_ALLOWED_ORIGINS: 'https://ok.example.com,ftp://x.example.com,https://a.example.com/path' }),
    ).toEqual([
      {
        field: 'TASKGATE_ALLOWED_ORIGINS',
        message: '"ftp://x.example.com" is not an origin like https://app.example.com',
      },
      {
        field: 'TASKGATE_ALLOWED_ORIGINS',
        message: '"https://a.example.com/path" is not an origin like https://app.example.com',
      },
    ]);
  });

  it('warns about unknown TASKGATE_ variables and suggests the likely one', () => {
    const { warnings } = loadConfig({ TASKGATE_TOKEN: 'x', TASKGATE_SOMETHING_ELSE: '1', UNRELATED: '1' }, '/');
    expect(warnings).toEqual([
      'unknown setting TASKGATE_TOKEN is ignored (did you mean TASKGATE_TOKENS?)',
      'unknown setting TASKGATE_SOMETHING_ELSE is ignored',
    ]);
  });

  it('does not call a variable the command reads itself ignored', () => {
    const env = { TASKGATE_URL: 'http://127.0.0.1:8080', TASKGATE_TOKEN: 'x', TASKGATE_SOMETHING_ELSE: '1' };
    expect(loadConfig(env, '/', ['TASKGATE_URL', 'TASKGATE_TOKEN']).warnings).toEqual([
      'unknown setting TASKGATE_SOMETHING_ELSE is ignored',
    ]);
  });

  it('treats empty values as unset', () => {
    expect(loadConfig({ DATABASE_URL: '', PORT: ' ' }, '/').config).toMatchObject({ databaseUrl: null, port: 8080 });
  });
});

describe('relay settings', () => {
  const SECRET = 'relay-secret-0123456789';

  it('default to no sinks (an idle relay), 10 attempts, a 30 s lease and 64 deliveries in flight', () => {
    expect(loadConfig({}, '/').config.relay).toEqual({
      sinks: [],
      secret: null,
      maxAttempts: 10,
      leaseMs: 30_000,
      concurrency: 64,
    });
  });

  it('reads sinks, secret, attempts, lease and concurrency', () => {
    const { config } = loadConfig(
      {
        TASKGATE_RELAY_SINKS: 'https://hooks.example.com/taskgate, http://10.0.0.5:9000/in?token=x',
        TASKGATE_RELAY_SECRET: SECRET,
        TASKGATE_RELAY_MAX_ATTEMPTS: '3',
        TASKGATE_RELAY_LEASE_MS: '5000',
        TASKGATE_RELAY_CONCURRENCY: '8',
      },
      '/',
    );
    expect(config.relay).toEqual({
      sinks: ['https://hooks.example.com/taskgate', 'http://10.0.0.5:9000/in?token=x'],
      secret: SECRET,
      maxAttempts: 3,
      leaseMs: 5_000,
      concurrency: 8,
    });
  });

  it('names the field of a bad sink, a missing or short secret, and out-of-range numbers, without echoing values', () => {
    const found = problems({
      TASKGATE_RELAY_SINKS:
        'https://ok.example.com/h,ftp://files.example.com/x?key=hidden,not a url,https://ok.example.com/h',
      TASKGATE_RELAY_MAX_ATTEMPTS: '0',
      TASKGATE_RELAY_LEASE_MS: '999',
      TASKGATE_RELAY_CONCURRENCY: 'many',
    });
    expect(found).toEqual([
      { field: 'TASKGATE_RELAY_SINKS', message: 'entry 2 is not an http:// or https:// URL' },
      { field: 'TASKGATE_RELAY_SINKS', message: 'entry 3 is not an http:// or https:// URL' },
      { field: 'TASKGATE_RELAY_SINKS', message: 'entry 4 repeats a sink already given' },
      {
        field: 'TASKGATE_RELAY_SECRET',
        message: 'must be set when TASKGATE_RELAY_SINKS is (deliveries are signed with it)',
      },
      { field: 'TASKGATE_RELAY_MAX_ATTEMPTS', message: 'must be an integer from 1 to 1000 (got "0")' },
      { field: 'TASKGATE_RELAY_LEASE_MS', message: 'must be an integer from 1000 to 3600000 (got "999")' },
      { field: 'TASKGATE_RELAY_CONCURRENCY', message: 'must be an integer from 1 to 1024 (got "many")' },
    ]);
    expect(JSON.stringify(found)).not.toContain('hidden');

    const short = 'too-short';
    const weak = problems({ TASKGATE_RELAY_SINKS: 'https://ok.example.com/h', TASKGATE_RELAY_SECRET: short });
    expect(weak).toEqual([{ field: 'TASKGATE_RELAY_SECRET', message: 'must be at least 16 characters' }]);
    expect(JSON.stringify(weak)).not.toContain(short);
  });
});

describe('isLoopbackHost', () => {
  it('knows the loopback names and addresses', () => {
    expect(['127.0.0.1', '127.1.2.3', '::1', 'localhost'].map(isLoopbackHost)).toEqual([true, true, true, true]);
    expect(['0.0.0.0', '10.0.0.1', '::', 'example.com'].map(isLoopbackHost)).toEqual([false, false, false, false]);
  });

  it('reads the OAuth settings, and lets a server with OAuth alone bind beyond loopback', () => {
    const { config } = loadConfig(
      {
        HOST: '0.0.0.0',
        TASKGATE_OAUTH_ISSUER: 'https://login.example.com/realms/acme',
        TASKGATE_OAUTH_RESOURCE: 'https://taskgate.example.com/',
        TASKGATE_OAUTH_TENANT_CLAIM: 'org_id',
        TASKGATE_METRICS_TOKEN: TOKEN,
      },
      '/srv',
    );
    expect(config.oauth).toEqual({
      issuer: 'https://login.example.com/realms/acme',
      resource: 'https://taskgate.example.com',
      tenantClaim: 'org_id',
    });
    expect(config.metricsToken).toBe(TOKEN);
    expect(loadConfig({}, '/srv').config).toMatchObject({ oauth: null, metricsToken: null });
    expect(
      loadConfig(
        { TASKGATE_OAUTH_ISSUER: 'http://127.0.0.1:9000', TASKGATE_OAUTH_RESOURCE: 'http://localhost:8080' },
        '/srv',
      ).config.oauth,
    ).toMatchObject({ tenantClaim: 'tenant' });
  });

  it('names each OAuth problem in one line', () => {
    const issuer = 'https://login.example.com';
    const resource = 'https://taskgate.example.com';
    expect(problems({ TASKGATE_OAUTH_ISSUER: issuer })).toEqual([
      { field: 'TASKGATE_OAUTH_RESOURCE', message: expect.stringContaining('must be set with TASKGATE_OAUTH_ISSUER') },
    ]);
    expect(problems({ TASKGATE_OAUTH_RESOURCE: resource })[0]?.field).toBe('TASKGATE_OAUTH_ISSUER');
    expect(problems({ TASKGATE_OAUTH_TENANT_CLAIM: 'tenant' })[0]?.field).toBe('TASKGATE_OAUTH_TENANT_CLAIM');
    const bad: [Record<string, string>, string, RegExp][] = [
      [{ TASKGATE_OAUTH_ISSUER: 'http://login.example.com' }, 'TASKGATE_OAUTH_ISSUER', /must be https/],
      [{ TASKGATE_OAUTH_ISSUER: 'login.example.com' }, 'TASKGATE_OAUTH_ISSUER', /must be a URL/],
      [{ TASKGATE_OAUTH_RESOURCE: `${resource}/#x` }, 'TASKGATE_OAUTH_RESOURCE', /no fragment/],
      [{ TASKGATE_OAUTH_RESOURCE: `${resource}/?a=1` }, 'TASKGATE_OAUTH_RESOURCE', /no query/],
      [{ TASKGATE_OAUTH_RESOURCE: 'https://u:p@taskgate.example.com' }, 'TASKGATE_OAUTH_RESOURCE', /user name/],
      [{ TASKGATE_OAUTH_TENANT_CLAIM: 'a claim' }, 'TASKGATE_OAUTH_TENANT_CLAIM', /claim name/],
    ];
    for (const [env, field, message] of bad) {
      const found = problems({ TASKGATE_OAUTH_ISSUER: issuer, TASKGATE_OAUTH_RESOURCE: resource, ...env });
      expect(found).toEqual([{ field, message: expect.stringMatching(message) }]);
    }
    expect(problems({ TASKGATE_METRICS_TOKEN: 'short' })).toEqual([
      { field: 'TASKGATE_METRICS_TOKEN', message: expect.stringContaining('16+ characters') },
    ]);
    // Neither tokens nor OAuth beyond loopback is still refused, naming both ways out.
    expect(problems({ HOST: '0.0.0.0' })[0]?.message).toContain('TASKGATE_OAUTH_ISSUER');
  });
});
