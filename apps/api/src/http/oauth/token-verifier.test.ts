import net from 'node:net';
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { createTokenVerifier, IssuerUnavailable, type OAuthSettings, TokenRejected } from './token-verifier.ts';

const ISSUER = 'https://login.example.com/realms/acme';
const RESOURCE = 'https://taskgate.example.com';
const SETTINGS: OAuthSettings = { issuer: ISSUER, resource: RESOURCE, tenantClaim: 'tenant' };

interface Key {
  readonly privateKey: Parameters<SignJWT['sign']>[0];
  readonly jwk: JWK;
}

async function newKey(kid: string): Promise<Key> {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  return { privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' } };
}

/**
 * An issuer behind a fetch the test owns: what its metadata says, which keys it publishes, whether
 * it answers at all, and every URL asked for.
 */
async function fakeIssuer() {
  const state = {
    keys: [await newKey('k1')],
    metadataIssuer: ISSUER,
    down: false,
    jwksStatus: 200,
    fetched: [] as string[],
    /** Held key-set answers, released by the test (to overlap requests). */
    hold: null as Promise<void> | null,
  };
  const fetchFn = (async (input: string | URL | Request) => {
    const url = String(input);
    state.fetched.push(url);
    if (state.down) throw new TypeError('fetch failed');
    if (url === 'https://login.example.com/.well-known/oauth-authorization-server/realms/acme') {
      return Response.json({ issuer: state.metadataIssuer, jwks_uri: 'https://login.example.com/keys' });
    }
    if (url === 'https://login.example.com/keys') {
      if (state.hold) await state.hold;
      if (state.jwksStatus !== 200) return new Response('no', { status: state.jwksStatus });
      return Response.json({ keys: state.keys.map((key) => key.jwk) });
    }
    return new Response('not found', { status: 404 });
  }) as typeof fetch;
  const sign = (claims: Record<string, unknown>, key: Key = state.keys[0] as Key, alg = 'ES256') =>
    new SignJWT({
      iss: ISSUER,
      aud: RESOURCE,
      tenant: 'acme',
      scope: 'taskgate:tools',
      exp: Math.floor(Date.now() / 1000) + 3_600,
      ...claims,
    })
      .setProtectedHeader({ alg, kid: key.jwk.kid as string })
      .sign(key.privateKey);
  return { state, fetchFn, sign, keysFetched: () => state.fetched.filter((url) => url.endsWith('/keys')).length };
}

function clock(start = Date.now()) {
  let now = start;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

describe('createTokenVerifier', () => {
  it('gives up on an issuer that never answers within one timeout, not one per discovery URL', async () => {
    // Accepts every connection and never writes a byte: each of the three metadata URLs hangs.
    const sockets: net.Socket[] = [];
    const silent = net.createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const issuer = `http://127.0.0.1:${(silent.address() as net.AddressInfo).port}/realms/acme`;
    const key = await newKey('k1');
    const token = await new SignJWT({
      iss: issuer,
      aud: RESOURCE,
      tenant: 'acme',
      exp: Math.floor(Date.now() / 1000) + 60,
    })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .sign(key.privateKey);
    const verifier = createTokenVerifier({ ...SETTINGS, issuer }, { fetchTimeoutMs: 400 });
    try {
      const started = performance.now();
      await expect(verifier.verify(token)).rejects.toThrow(IssuerUnavailable);
      // Three timeouts would be 1,200 ms; one is 400, with room for a loaded machine.
      expect(performance.now() - started).toBeLessThan(800);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it('gives up within one timeout on an issuer whose metadata answers late and whose key set never answers', async () => {
    // Discovery takes most of the bound, then the key set hangs: one deadline covers both.
    const issuer = await fakeIssuer();
    let discovered!: () => void;
    const discovery = new Promise<void>((resolve) => {
      discovered = resolve;
    });
    const fetchFn = (async (input: string | URL | Request, init?: RequestInit) => {
      const url = String(input);
      const signal = init?.signal as AbortSignal;
      const hang = () =>
        new Promise<never>((_, reject) =>
          signal.addEventListener('abort', () => reject(signal.reason), { once: true }),
        );
      if (url.endsWith('/keys')) return hang();
      // The metadata answers once 800 of the 1,000 ms have passed.
      await discovery;
      return issuer.fetchFn(input, init);
    }) as typeof fetch;
    const verifier = createTokenVerifier(SETTINGS, { fetch: fetchFn, fetchTimeoutMs: 1_000 });
    const started = performance.now();
    const verifying = verifier.verify(await issuer.sign({}));
    setTimeout(discovered, 800);
    await expect(verifying).rejects.toThrow(IssuerUnavailable);
    // A timeout each would be 800 + 1,000 ms; one is 1,000, with room for a loaded machine.
    expect(performance.now() - started).toBeLessThan(1_500);
  });

  it('finds the key set through RFC 8414 metadata with the path inserted, and reads the tenant and scopes', async () => {
    const issuer = await fakeIssuer();
    const verifier = createTokenVerifier(SETTINGS, { fetch: issuer.fetchFn });
    const verified = await verifier.verify(await issuer.sign({ sub: 'alice', scp: ['taskgate:tasks'] }));
    expect(verified).toEqual({
      tenant: 'acme',
      subject: 'alice',
      scopes: new Set(['taskgate:tools', 'taskgate:tasks']),
    });
    expect(issuer.state.fetched[0]).toBe(
      'https://login.example.com/.well-known/oauth-authorization-server/realms/acme',
    );
  });

  it('refuses metadata that names another issuer, and asks again only after the retry interval', async () => {
    const issuer = await fakeIssuer();
    issuer.state.metadataIssuer = 'https://evil.example.com';
    const time = clock();
    const verifier = createTokenVerifier(SETTINGS, { fetch: issuer.fetchFn, now: time.now });
    const token = await issuer.sign({});
    await expect(verifier.verify(token)).rejects.toThrow(IssuerUnavailable);
    await expect(verifier.verify(token)).rejects.toThrow(/retrying shortly/);
    expect(issuer.state.fetched).toHaveLength(1);
    issuer.state.metadataIssuer = ISSUER;
    time.advance(5_000);
    expect((await verifier.verify(token)).tenant).toBe('acme');
  });

  it('meets a key set that cannot be read with 503s, one fetch per cooldown, and recovers', async () => {
    const issuer = await fakeIssuer();
    issuer.state.jwksStatus = 500;
    const time = clock();
    const verifier = createTokenVerifier(SETTINGS, { fetch: issuer.fetchFn, now: time.now });
    const token = await issuer.sign({});
    for (let attempt = 0; attempt < 5; attempt++)
      await expect(verifier.verify(token)).rejects.toThrow(IssuerUnavailable);
    expect(issuer.keysFetched()).toBe(1);
    issuer.state.jwksStatus = 200;
    time.advance(30_000);
    expect((await verifier.verify(token)).tenant).toBe('acme');
    expect(issuer.keysFetched()).toBe(2);
  });

  it('shares one key-set fetch among tokens that arrive together with a rotated key', async () => {
    const issuer = await fakeIssuer();
    const time = clock();
    const verifier = createTokenVerifier(SETTINGS, { fetch: issuer.fetchFn, now: time.now });
    await verifier.verify(await issuer.sign({}));
    const rotated = await newKey('k2');
    issuer.state.keys = [rotated, ...issuer.state.keys];
    const token = await issuer.sign({}, rotated);
    // Within the cooldown the new key is not fetched for: refused, no fetch.
    await expect(verifier.verify(token)).rejects.toThrow(/does not publish/);
    expect(issuer.keysFetched()).toBe(1);
    time.advance(30_000);
    const held = Promise.withResolvers<void>();
    issuer.state.hold = held.promise;
    const three = Promise.all([verifier.verify(token), verifier.verify(token), verifier.verify(token)]);
    // Every one of them is waiting on the fetch before it is let go.
    await new Promise((resolve) => setImmediate(resolve));
    held.resolve();
    expect((await three).map((verified) => verified.tenant)).toEqual(['acme', 'acme', 'acme']);
    expect(issuer.keysFetched()).toBe(2);
  });

  it('reads the key set again when it is old, and serves from the stale one while that fails', async () => {
    const issuer = await fakeIssuer();
    const time = clock();
    const verifier = createTokenVerifier(SETTINGS, { fetch: issuer.fetchFn, now: time.now });
    const token = await issuer.sign({});
    await verifier.verifyUncached(token);
    time.advance(600_000);
    issuer.state.down = true;
    expect((await verifier.verifyUncached(token)).token.tenant).toBe('acme');
    expect(issuer.keysFetched()).toBe(2);
    issuer.state.down = false;
    time.advance(30_000);
    await verifier.verifyUncached(token);
    expect(issuer.keysFetched()).toBe(3);
  });

  it('remembers a verified token for a minute at most, and never past its exp', async () => {
    const issuer = await fakeIssuer();
    const time = clock();
    const verifier = createTokenVerifier(SETTINGS, { fetch: issuer.fetchFn, now: time.now, leewaySeconds: 0 });
    const soon = await issuer.sign({ exp: Math.floor(time.now() / 1000) + 10 });
    expect((await verifier.verify(soon)).tenant).toBe('acme');
    time.advance(11_000);
    await expect(verifier.verify(soon)).rejects.toThrow(/has expired/);
    const later = await issuer.sign({});
    await verifier.verify(later);
    // Within the minute the answer is remembered: the keys are not consulted (they are gone).
    issuer.state.keys = [];
    time.advance(59_000);
    expect((await verifier.verify(later)).tenant).toBe('acme');
    time.advance(600_000);
    issuer.state.jwksStatus = 200;
    await expect(verifier.verify(later)).rejects.toThrow(/does not publish/);
  });

  it('refuses what is not an acceptable token, saying why', async () => {
    const issuer = await fakeIssuer();
    const verifier = createTokenVerifier(SETTINGS, { fetch: issuer.fetchFn });
    const secret = new TextEncoder().encode('a-shared-secret-that-anyone-could-hold');
    const hs256 = await new SignJWT({ iss: ISSUER, aud: RESOURCE, tenant: 'acme' })
      .setProtectedHeader({ alg: 'HS256', kid: 'k1' })
      .setExpirationTime('5m')
      .sign(secret);
    const noExp = await new SignJWT({ iss: ISSUER, aud: RESOURCE, tenant: 'acme' })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .sign((issuer.state.keys[0] as Key).privateKey);
    const cases: [string, RegExp][] = [
      [hs256, /algorithm is not accepted/],
      [noExp, /exp claim/],
      [await issuer.sign({ aud: [RESOURCE.toUpperCase()] }), /another audience/],
      [await issuer.sign({ tenant: 42 }), /not a tenant name/],
      [await issuer.sign({ tenant: '' }), /not a tenant name/],
      [`${'a'.repeat(5_000)}.${'b'.repeat(5_000)}.c`, /too long/],
      ['a.b', /not a JWT/],
      ['a.b.c', /not a valid JWT/],
    ];
    for (const [token, reason] of cases) {
      const refused = await verifier.verify(token).then(
        () => null,
        (error: unknown) => error,
      );
      expect(refused, String(reason)).toBeInstanceOf(TokenRejected);
      expect((refused as Error).message).toMatch(reason);
    }
    // An audience list that contains this server is accepted (RFC 7519 §4.1.3).
    expect((await verifier.verify(await issuer.sign({ aud: ['https://other.example.com', RESOURCE] }))).tenant).toBe(
      'acme',
    );
  });
});
