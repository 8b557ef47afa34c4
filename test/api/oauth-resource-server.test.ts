import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import { createAuthenticator, createTokenVerifier, type OAuthSettings, SCOPE_GROUPS, scopeName } from '@taskgate/api';
import { TaskgateClient } from '@taskgate/client';
import { isTaskgateError } from '@taskgate/errors';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { freePort } from '../support/free-port.ts';
import { type IdentityProvider, startIdentityProvider } from '../support/identity-provider.ts';
import { type Platform, serveApi, startPlatform } from '../support/task-platform.ts';

// Taskgate as an OAuth 2.1 resource server, against a real OpenID provider (oidc-provider) in this
// process, driven by the official SDK v1 client's OAuth support: the 401 names the resource
// metadata, the client discovers the provider, registers, authorizes with PKCE and a resource
// indicator, and calls with the JWT it got. Then tokens that must each be refused, and nothing run.
const database = useTestDatabase();
const SERVICE_TOKEN = 'static-service-token-0123456789';
const METRICS_TOKEN = 'static-metrics-token-0123456789';
let platform: Platform;
let idp: IdentityProvider;
let api: Awaited<ReturnType<typeof serveApi>>;
let settings: OAuthSettings;
/** The verifier's clock runs ahead by this much (to pass the key cache's cooldown without waiting). */
let clockOffsetMs = 0;

beforeAll(async () => {
  platform = await startPlatform(database.url);
  await platform.startWorker();
  const port = await freePort();
  const resource = `http://127.0.0.1:${port}`;
  idp = await startIdentityProvider({ resources: [resource], scopes: SCOPE_GROUPS.map(scopeName) });
  settings = { issuer: idp.issuer, resource, tenantClaim: 'tenant' };
  api = await serveApi(platform, database.url, {
    port,
    auth: createAuthenticator({
      tokens: new Map([[SERVICE_TOKEN, 'acme']]),
      unauthenticatedTenant: 'default',
      oauth: { settings, verifier: createTokenVerifier(settings, { now: () => Date.now() + clockOffsetMs }) },
      metricsToken: METRICS_TOKEN,
    }),
  });
});
afterAll(async () => {
  await api?.close();
  await idp?.stop();
  await platform?.stop();
});

const REDIRECT_URI = 'http://127.0.0.1:1/callback';

/** What an MCP client keeps between runs, in memory; its "browser" is the provider's authorize(). */
class MemoryOAuthProvider implements OAuthClientProvider {
  client: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = '';
  authorizationUrl: URL | null = null;
  get redirectUrl() {
    return REDIRECT_URI;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'taskgate-oauth-test',
      redirect_uris: [REDIRECT_URI],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.client = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
}

/** The SDK's whole flow: connect → 401 → discovery, registration, authorization → connect again. */
async function signIn(provider: MemoryOAuthProvider): Promise<Client> {
  const first = new Client({ name: 'taskgate-oauth-test', version: '1.0.0' });
  await expect(
    first.connect(new StreamableHTTPClientTransport(api.mcpUrl, { authProvider: provider })),
  ).rejects.toThrow(UnauthorizedError);
  expect(provider.authorizationUrl).not.toBeNull();
  const code = await idp.authorize(provider.authorizationUrl as URL, REDIRECT_URI);
  const transport = new StreamableHTTPClientTransport(api.mcpUrl, { authProvider: provider });
  await transport.finishAuth(code);
  const client = new Client({ name: 'taskgate-oauth-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(api.mcpUrl, { authProvider: provider }));
  return client;
}

describe('Taskgate as an OAuth resource server', () => {
  it('serves the SDK client through discovery from the 401, code with PKCE, and calls', async () => {
    idp.signInAs('alice', 'acme');
    const provider = new MemoryOAuthProvider();
    const client = await signIn(provider);
    try {
      const url = provider.authorizationUrl as URL;
      expect(url.searchParams.get('code_challenge_method')).toBe('S256');
      expect(url.searchParams.get('resource')).toBe(settings.resource);
      expect(url.searchParams.get('scope')).toBe('taskgate:tools taskgate:tasks');
      const result = await client.callTool({ name: 'greet', arguments: { name: 'OAuth' } });
      expect(JSON.stringify(result.content)).toContain('OAuth');
      expect(result.isError ?? false).toBe(false);
    } finally {
      await client.close();
    }
    const accessToken = provider.saved?.access_token ?? '';
    const claims = JSON.parse(Buffer.from(accessToken.split('.')[1] ?? '', 'base64url').toString());
    expect(claims).toMatchObject({ iss: idp.issuer, aud: settings.resource, tenant: 'acme' });
  });
});

describe('@taskgate/client against the OAuth resource server', () => {
  it('sends a static token, refuses a wrong one as TG_UNAUTHORIZED, and uses the SDK OAuth provider', async () => {
    const byToken = await TaskgateClient.connectHttp({ url: api.mcpUrl.href, token: SERVICE_TOKEN });
    try {
      expect(JSON.stringify((await byToken.callTool('greet', { name: 'token' })).content)).toContain('token');
    } finally {
      await byToken.close();
    }
    const refused = await TaskgateClient.connectHttp({ url: api.mcpUrl.href, token: 'not-the-token-0123456789' }).then(
      () => null,
      (error: unknown) => error,
    );
    expect(isTaskgateError(refused) && refused.code).toBe('TG_UNAUTHORIZED');

    idp.signInAs('carol', 'acme');
    const provider = new MemoryOAuthProvider();
    await (await signIn(provider)).close();
    const byOAuth = await TaskgateClient.connectHttp({ url: api.mcpUrl.href, authProvider: provider });
    try {
      expect(JSON.stringify((await byOAuth.callTool('greet', { name: 'oauth-client' })).content)).toContain(
        'oauth-client',
      );
    } finally {
      await byOAuth.close();
    }
    const bare = await TaskgateClient.connectHttp({
      url: api.mcpUrl.href,
      authProvider: { token: async () => provider.saved?.access_token },
    });
    try {
      expect((await bare.callTool('greet', { name: 'bare' })).isError ?? false).toBe(false);
    } finally {
      await bare.close();
    }
  });
});

const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'oauth-test', version: '1.0.0' },
  'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
};
let nextId = 1;

/** One 2026-07-28 request, as a client sends it, with `token` (or none) as its bearer. */
async function mcp(token: string | null, method: string, params: Record<string, unknown> = {}, path = '/mcp') {
  const body = { jsonrpc: '2.0', id: nextId++, method, params: { ...params, _meta: META } };
  const named = params.name ?? params.taskId;
  const name = typeof named === 'string' ? { 'mcp-name': named } : {};
  const response = await fetch(new URL(path, api.mcpUrl), {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      ...name,
      ...(token === null ? {} : { authorization: `Bearer ${token}` }),
    },
    body: JSON.stringify(body),
  });
  // biome-ignore lint/suspicious/noExplicitAny: JSON-RPC answers, read field by field.
  return { status: response.status, headers: response.headers, body: (await response.json()) as any };
}

async function rest(token: string | null, method: string, path: string, body?: unknown) {
  const response = await fetch(new URL(path, api.mcpUrl), {
    method,
    headers: {
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(token === null ? {} : { authorization: `Bearer ${token}` }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  // biome-ignore lint/suspicious/noExplicitAny: problem+json or a task, read field by field.
  let json: any = null;
  try {
    json = JSON.parse(text);
  } catch {
    json = null;
  }
  return { status: response.status, headers: response.headers, text, body: json };
}

const ALL_SCOPES = SCOPE_GROUPS.map(scopeName).join(' ');

/** A token as the provider issues them, with `overrides` changing (or, as undefined, removing) claims. */
function token(overrides: Record<string, unknown> = {}, options: Parameters<IdentityProvider['mint']>[1] = {}) {
  const claims: Record<string, unknown> = {
    sub: 'alice',
    aud: settings.resource,
    scope: ALL_SCOPES,
    tenant: 'acme',
    client_id: 'test-client',
    ...overrides,
  };
  for (const [key, value] of Object.entries(claims)) if (value === undefined) delete claims[key];
  return idp.mint(claims, options);
}

/** How many slow_compute tasks carry this label: 0 says a refused call ran nothing. */
async function tasksLabelled(label: string): Promise<number> {
  const { rows } = await sql<{ count: string }>`
    SELECT count(*) AS count FROM tasks WHERE tool = 'slow_compute' AND arguments->>'label' = ${label}`.execute(
    platform.db,
  );
  return Number(rows[0]?.count);
}

function challengeOf(headers: Headers): string {
  return headers.get('www-authenticate') ?? '';
}

describe('the challenge and the metadata', () => {
  it('answers /mcp without a token 401, naming the path-suffixed metadata and the scopes to ask for', async () => {
    const answer = await mcp(null, 'tools/list');
    expect(answer.status).toBe(401);
    expect(answer.body.error.data.code).toBe('TG_UNAUTHORIZED');
    expect(challengeOf(answer.headers)).toBe(
      `Bearer resource_metadata="${settings.resource}/.well-known/oauth-protected-resource/mcp", scope="taskgate:tools taskgate:tasks"`,
    );
    const metadata = await rest(null, 'GET', '/.well-known/oauth-protected-resource/mcp');
    expect(metadata.status).toBe(200);
    expect(metadata.body).toEqual({
      resource: settings.resource,
      authorization_servers: [idp.issuer],
      scopes_supported: ['taskgate:tools', 'taskgate:tasks', 'taskgate:admin', 'taskgate:metrics'],
      bearer_methods_supported: ['header'],
      resource_name: 'Taskgate',
    });
    expect((await rest(null, 'GET', '/.well-known/oauth-protected-resource')).body).toEqual(metadata.body);
  });

  it("answers REST without a token 401 as problem+json, naming the root metadata and the route's scope", async () => {
    const answer = await rest(null, 'GET', '/v1/tasks');
    expect(answer.status).toBe(401);
    expect(answer.body.code).toBe('TG_UNAUTHORIZED');
    expect(challengeOf(answer.headers)).toBe(
      `Bearer resource_metadata="${settings.resource}/.well-known/oauth-protected-resource", scope="taskgate:tasks"`,
    );
    const events = await rest(null, 'GET', `/v1/tasks/${crypto.randomUUID()}/events`);
    expect(events.status).toBe(401);
  });

  it('refuses a token in the query string (400), even a valid one', async () => {
    const valid = await token();
    const answer = await rest(null, 'GET', `/v1/tasks?access_token=${valid}`);
    expect(answer.status).toBe(400);
    expect(answer.body.code).toBe('TG_TOKEN_IN_QUERY');
    expect(challengeOf(answer.headers)).toContain('error="invalid_request"');
    const viaMcp = await mcp(valid, 'tools/list', {}, `/mcp?access_token=${valid}`);
    expect(viaMcp.status).toBe(400);
    expect(viaMcp.body.error.data.code).toBe('TG_TOKEN_IN_QUERY');
  });
});

describe('tokens that are refused, with nothing run', () => {
  const now = () => Math.floor(Date.now() / 1000);
  const cases: [string, () => Promise<string>, RegExp][] = [
    ['an expired token', () => token({}, { expiresIn: now() - 120 }), /has expired/],
    ['a token for another audience', () => token({ aud: 'https://other.example.com' }), /another audience/],
    ['a token from another issuer', () => token({ iss: 'https://other.example.com' }), /another issuer/],
    ['a token signed by an unknown key', async () => token({}, { key: await idp.strangerKey() }), /does not publish/],
    ['a token without the tenant claim', () => token({ tenant: undefined }), /no tenant claim/],
    ['a token whose tenant claim is not a tenant name', () => token({ tenant: 'a b/c' }), /not a tenant name/],
    ['a token that is not yet valid', () => token({ nbf: now() + 600 }), /not valid yet/],
    ['a string that is not a JWT', async () => 'not-a-jwt', /not a JWT/],
  ];
  for (const [what, make, reason] of cases) {
    it(`answers ${what} 401 invalid_token`, async () => {
      const label = `refused-${nextId}`;
      const answer = await mcp(await make(), 'tools/call', { name: 'slow_compute', arguments: { seconds: 0, label } });
      expect(answer.status).toBe(401);
      expect(answer.body.error.data.code).toBe('TG_UNAUTHORIZED');
      expect(answer.body.error.message).toMatch(reason);
      const challenge = challengeOf(answer.headers);
      expect(challenge).toContain('error="invalid_token"');
      expect(challenge).toContain('resource_metadata=');
      expect(await tasksLabelled(label)).toBe(0);
    });
  }

  it('accepts a token expired within the 30 s leeway, and the call runs (the control)', async () => {
    const label = `accepted-${nextId}`;
    const answer = await mcp(await token({}, { expiresIn: now() - 5 }), 'tools/call', {
      name: 'slow_compute',
      arguments: { seconds: 0, label },
    });
    expect(answer.status).toBe(200);
    expect(answer.body.result.isError ?? false).toBe(false);
    expect(await tasksLabelled(label)).toBe(1);
  });

  it('answers a token without the scope a method needs 403 insufficient_scope, naming it', async () => {
    const toolsOnly = await token({ scope: 'taskgate:tools' });
    const refused = await mcp(toolsOnly, 'tasks/get', { taskId: crypto.randomUUID() });
    expect(refused.status).toBe(403);
    expect(refused.body.error.data.code).toBe('TG_INSUFFICIENT_SCOPE');
    expect(challengeOf(refused.headers)).toContain('error="insufficient_scope"');
    expect(challengeOf(refused.headers)).toContain('scope="taskgate:tasks"');
    // The tools scope does call tools.
    expect((await mcp(toolsOnly, 'tools/list')).status).toBe(200);

    const tasksOnly = await token({ scope: 'taskgate:tasks' });
    const label = `scope-${nextId}`;
    const call = await mcp(tasksOnly, 'tools/call', { name: 'slow_compute', arguments: { seconds: 0, label } });
    expect(call.status).toBe(403);
    expect(challengeOf(call.headers)).toContain('scope="taskgate:tools"');
    expect(await tasksLabelled(label)).toBe(0);
    const post = await rest(tasksOnly, 'POST', '/v1/tasks', { tool: 'slow_compute', arguments: { seconds: 0, label } });
    expect(post.status).toBe(403);
    expect(post.body.code).toBe('TG_INSUFFICIENT_SCOPE');
    expect(await tasksLabelled(label)).toBe(0);

    const admin = await rest(
      await token({ scope: 'taskgate:tools taskgate:tasks' }),
      'GET',
      '/v1/reconciliation-items',
    );
    expect(admin.status).toBe(403);
    expect(challengeOf(admin.headers)).toContain('scope="taskgate:admin"');
    expect((await rest(await token({ scope: 'taskgate:admin' }), 'GET', '/v1/reconciliation-items')).status).toBe(200);

    // Saying a URL elicitation is done speaks for the server to its clients: admin too.
    const completion = await rest(
      await token({ scope: 'taskgate:tools taskgate:tasks' }),
      'POST',
      '/v1/elicitations/e-1/complete',
    );
    expect(completion.status).toBe(403);
    expect(challengeOf(completion.headers)).toContain('scope="taskgate:admin"');
    const unknown = await rest(await token({ scope: 'taskgate:admin' }), 'POST', '/v1/elicitations/e-1/complete');
    expect([unknown.status, unknown.body.code]).toEqual([404, 'TG_ELICITATION_NOT_FOUND']);
  });
});

describe('key rotation', () => {
  it('fetches a rotated key once, and a made-up kid no more often than the cooldown allows', async () => {
    // A token with the current key, so the key set is cached before the rotation.
    const old = await token();
    expect((await mcp(old, 'tools/list')).status).toBe(200);
    const before = idp.jwksFetches();
    await idp.rotateKey();
    // The cache's 30 s cooldown since its last fetch has passed (the verifier's clock, moved).
    clockOffsetMs += 31_000;
    const rotated = await token();
    const kid = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[0] as string, 'base64url').toString()).kid;
    expect(kid(rotated)).not.toBe(kid(old));
    expect((await mcp(rotated, 'tools/list')).status).toBe(200);
    expect(idp.jwksFetches()).toBe(before + 1);
    expect((await mcp(rotated, 'tools/list')).status).toBe(200);
    expect(idp.jwksFetches()).toBe(before + 1);

    const stranger = await idp.strangerKey();
    for (let attempt = 0; attempt < 5; attempt++) {
      const answer = await mcp(await token({}, { key: stranger }), 'tools/list');
      expect(answer.status).toBe(401);
    }
    expect(idp.jwksFetches()).toBe(before + 1);
  });
});

describe('tenancy across OAuth and static tokens', () => {
  it("keeps one tenant's tasks invisible to the other, whichever kind of token each holds", async () => {
    const fromService = await rest(SERVICE_TOKEN, 'POST', '/v1/tasks', {
      tool: 'slow_compute',
      arguments: { seconds: 0, label: 'static-acme' },
    });
    expect(fromService.status).toBe(201);
    const globex = await token({ tenant: 'globex' });
    const acme = await token({ tenant: 'acme' });
    expect((await rest(globex, 'GET', `/v1/tasks/${fromService.body.id}`)).status).toBe(404);
    expect((await rest(globex, 'GET', `/v1/tasks/${fromService.body.id}/events`)).status).toBe(404);
    const same = await rest(acme, 'GET', `/v1/tasks/${fromService.body.id}`);
    expect(same.text).toContain(fromService.body.id);
    expect(same.status).toBe(200);
    const listed = await rest(globex, 'GET', '/v1/tasks');
    expect(listed.status).toBe(200);
    expect(listed.text).not.toContain(fromService.body.id);
    // Another tenant's task is answered as one that does not exist.
    const unknown = (await mcp(globex, 'tasks/get', { taskId: crypto.randomUUID() })).body.error;
    expect(unknown.code).toBe(-32602);
    expect((await mcp(globex, 'tasks/get', { taskId: fromService.body.id })).body.error.code).toBe(unknown.code);
    const mine = await mcp(acme, 'tasks/get', { taskId: fromService.body.id });
    expect(mine.body.result.taskId).toBe(fromService.body.id);

    const fromOAuth = await rest(globex, 'POST', '/v1/tasks', {
      tool: 'slow_compute',
      arguments: { seconds: 0, label: 'oauth-globex' },
    });
    expect(fromOAuth.status).toBe(201);
    expect((await rest(SERVICE_TOKEN, 'GET', `/v1/tasks/${fromOAuth.body.id}`)).status).toBe(404);
    expect((await rest(globex, 'GET', `/v1/tasks/${fromOAuth.body.id}`)).status).toBe(200);
  });
});

describe('/metrics', () => {
  it('asks for the metrics token or the metrics scope, never a tenant token', async () => {
    const open = await rest(null, 'GET', '/metrics');
    expect(open.status).toBe(401);
    expect(challengeOf(open.headers)).toContain('scope="taskgate:metrics"');
    expect((await rest(METRICS_TOKEN, 'GET', '/metrics')).status).toBe(200);
    expect((await rest(SERVICE_TOKEN, 'GET', '/metrics')).status).toBe(401);
    const scraper = await rest(await token({ scope: 'taskgate:metrics' }), 'GET', '/metrics');
    expect(scraper.status).toBe(200);
    expect(scraper.text).toMatch(/^# HELP /m);
    const noScope = await rest(await token({ scope: 'taskgate:tools' }), 'GET', '/metrics');
    expect(noScope.status).toBe(403);
    expect(noScope.body.code).toBe('TG_INSUFFICIENT_SCOPE');
  });
});
