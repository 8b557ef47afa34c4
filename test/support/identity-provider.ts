import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import Provider, { type Configuration, errors } from 'oidc-provider';

/**
 * A real OpenID provider (oidc-provider, OpenID-certified) in the test process, for Taskgate as a
 * resource server: dynamic client registration, authorization code with PKCE, resource indicators
 * (RFC 8707) with JWT access tokens whose audience is the resource, and a tenant claim. Its login
 * and consent are answered at once for `account` (what a person would click). Keys rotate by
 * restarting the provider behind the same issuer URL with a new key first.
 */
export interface IdentityProvider {
  readonly issuer: string;
  /** How many times the key set (jwks_uri) has been fetched. */
  jwksFetches(): number;
  /** The account a login signs in as, and the tenant its tokens carry (undefined: no claim). */
  signInAs(account: string, tenant: string | undefined): void;
  /** A new signing key: tokens are signed with it and the key set publishes it first. */
  rotateKey(): Promise<void>;
  /** Signs a token with the provider's current key (or `key`), for claims a flow would not give. */
  mint(claims: Record<string, unknown>, options?: { key?: SigningKey; expiresIn?: string | number }): Promise<string>;
  /** A key the provider does not publish. */
  strangerKey(): Promise<SigningKey>;
  /**
   * Follows an authorization URL the way a browser would (cookies, redirects, the login and
   * consent pages answered) until the redirect to `redirectUri`, and returns its `code`.
   */
  authorize(authorizationUrl: URL, redirectUri: string): Promise<string>;
  stop(): Promise<void>;
}

export interface SigningKey {
  readonly privateKey: Parameters<SignJWT['sign']>[0];
  readonly kid: string;
  readonly jwk: JWK;
}

export interface IdentityProviderOptions {
  /** The resources tokens may be issued for. */
  readonly resources: readonly string[];
  /** The scopes a resource offers. */
  readonly scopes: readonly string[];
  readonly tenantClaim?: string;
}

let keyCounter = 0;

async function newKey(): Promise<SigningKey> {
  const { privateKey } = await generateKeyPair('ES256', { extractable: true });
  keyCounter += 1;
  const kid = `key-${process.pid}-${keyCounter}`;
  const jwk = { ...(await exportJWK(privateKey)), kid, alg: 'ES256', use: 'sig' };
  return { privateKey, kid, jwk };
}

export async function startIdentityProvider(options: IdentityProviderOptions): Promise<IdentityProvider> {
  const tenantClaim = options.tenantClaim ?? 'tenant';
  let account = 'alice';
  let tenant: string | undefined = 'acme';
  let keys: SigningKey[] = [await newKey()];
  let jwksFetches = 0;
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const configuration = (): Configuration => ({
    jwks: { keys: keys.map((key) => key.jwk) },
    cookies: { keys: ['taskgate-test-cookie-key'] },
    clientDefaults: { id_token_signed_response_alg: 'ES256' },
    scopes: ['openid', 'offline_access', ...options.scopes],
    claims: { openid: ['sub'] },
    findAccount: async (_ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => undefined as unknown as string,
        useGrantedResource: () => true,
        getResourceServerInfo: async (_ctx, resource) => {
          if (!options.resources.includes(resource)) throw new errors.InvalidTarget();
          return {
            scope: options.scopes.join(' '),
            audience: resource,
            accessTokenTTL: 600,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'ES256' } },
          };
        },
      },
    },
    extraTokenClaims: async () => (tenant === undefined ? undefined : { [tenantClaim]: tenant }),
    pkce: { required: () => true },
    ttl: { AccessToken: 600, AuthorizationCode: 60, Grant: 600, Interaction: 600, Session: 600 },
  });
  let provider = new Provider(issuer, configuration());
  let callback = provider.callback();

  server.on('request', (request: http.IncomingMessage, response: http.ServerResponse) => {
    const path = new URL(request.url ?? '/', issuer).pathname;
    if (path === '/jwks') jwksFetches += 1;
    if (path.startsWith('/interaction/')) {
      void finishInteraction(provider, request, response, account).catch((error: unknown) => {
        response.writeHead(500).end(String(error));
      });
      return;
    }
    callback(request, response);
  });

  return {
    issuer,
    jwksFetches: () => jwksFetches,
    signInAs(name, tenantName) {
      account = name;
      tenant = tenantName;
    },
    async rotateKey() {
      keys = [await newKey(), ...keys];
      provider = new Provider(issuer, configuration());
      callback = provider.callback();
    },
    async mint(claims, mintOptions = {}) {
      const key = mintOptions.key ?? (keys[0] as SigningKey);
      return new SignJWT({ iss: issuer, ...claims })
        .setProtectedHeader({ alg: 'ES256', kid: key.kid, typ: 'at+jwt' })
        .setIssuedAt()
        .setExpirationTime(mintOptions.expiresIn ?? '10m')
        .sign(key.privateKey);
    },
    strangerKey: newKey,
    async authorize(authorizationUrl, redirectUri) {
      const cookies = new Map<string, string>();
      let url = authorizationUrl.href;
      for (let hop = 0; hop < 20; hop++) {
        if (url.startsWith(redirectUri)) {
          const answer = new URL(url);
          const code = answer.searchParams.get('code');
          if (!code) throw new Error(`the provider answered ${answer.search}`);
          return code;
        }
        const response = await fetch(url, {
          redirect: 'manual',
          headers: { cookie: [...cookies].map(([name, value]) => `${name}=${value}`).join('; ') },
        });
        for (const line of response.headers.getSetCookie()) {
          const [pair] = line.split(';');
          const at = (pair as string).indexOf('=');
          cookies.set((pair as string).slice(0, at), (pair as string).slice(at + 1));
        }
        const location = response.headers.get('location');
        await response.body?.cancel();
        if (!location) throw new Error(`${url} answered ${response.status} without a redirect`);
        url = new URL(location, url).href;
      }
      throw new Error('the authorization did not end in 20 redirects');
    },
    stop: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The login page, then the consent page, answered as the signed-in person would. */
async function finishInteraction(
  provider: Provider,
  request: http.IncomingMessage,
  response: http.ServerResponse,
  account: string,
): Promise<void> {
  const details = await provider.interactionDetails(request, response);
  if (details.prompt.name === 'login') {
    await provider.interactionFinished(
      request,
      response,
      { login: { accountId: account } },
      { mergeWithLastSubmission: false },
    );
    return;
  }
  const grant = details.grantId
    ? ((await provider.Grant.find(details.grantId)) as InstanceType<Provider['Grant']>)
    : new provider.Grant({
        accountId: details.session?.accountId as string,
        clientId: details.params.client_id as string,
      });
  const missing = details.prompt.details as {
    missingOIDCScope?: string[];
    missingResourceScopes?: Record<string, string[]>;
  };
  if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
  for (const [resource, scopes] of Object.entries(missing.missingResourceScopes ?? {})) {
    grant.addResourceScope(resource, scopes.join(' '));
  }
  const grantId = await grant.save();
  await provider.interactionFinished(request, response, { consent: { grantId } }, { mergeWithLastSubmission: true });
}
