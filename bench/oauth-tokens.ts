// Durable tools/call of greet over HTTP with an OAuth access token (a JWT checked against the
// provider's published keys: signature, iss, aud, exp, tenant, scope) next to the same call with a
// static bearer token, in the same process, back to back, rounds interleaved: the cost of JWT
// validation on the path that matters. The provider is oidc-provider in this process; the key set
// is fetched once and cached, so the figure is the verification itself.
//   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench -- oauth-tokens
import { createAuthenticator, createTokenVerifier, SCOPE_GROUPS, scopeName } from '@taskgate/api';
import { freePort } from '../test/support/free-port.ts';
import { startIdentityProvider } from '../test/support/identity-provider.ts';
import { serveApi, startPlatform } from '../test/support/task-platform.ts';
import { benchDatabase } from './support/bench-database.ts';
import { greetCall, type LoadRequest, type LoadResult, loadFromChild } from './support/http-load.ts';
import { atLeastShareOfAnchor, median, printTable, reportGoals } from './support/report.ts';

const CONNECTIONS = Number(process.env.CONNECTIONS ?? 32);
const SECONDS = Number(process.env.SECONDS ?? 5);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const STATIC_TOKEN = 'bench-static-token-0123456789';
const rows: Record<string, string | number>[] = [];

const database = await benchDatabase();
try {
  const port = await freePort();
  const resource = `http://127.0.0.1:${port}`;
  const idp = await startIdentityProvider({ resources: [resource], scopes: SCOPE_GROUPS.map(scopeName) });
  const settings = { issuer: idp.issuer, resource, tenantClaim: 'tenant' };
  const platform = await startPlatform(database.url);
  await platform.startWorker({ concurrency: 32 });
  const api = await serveApi(platform, database.url, {
    port,
    auth: createAuthenticator({
      tokens: new Map([[STATIC_TOKEN, 'acme']]),
      unauthenticatedTenant: 'default',
      oauth: { settings, verifier: createTokenVerifier(settings) },
    }),
  });
  const jwt = await idp.mint({ sub: 'bench', aud: resource, tenant: 'acme', scope: 'taskgate:tools taskgate:tasks' });
  const sides = [
    { label: 'static bearer token (TASKGATE_TOKENS)', token: STATIC_TOKEN },
    { label: 'OAuth access token (ES256 JWT, cached keys)', token: jwt },
  ];
  const withToken = (token: string): LoadRequest => {
    const call = greetCall('greet');
    return { ...call, headers: { ...call.headers, authorization: `Bearer ${token}` } };
  };
  for (const side of sides)
    await loadFromChild(resource, withToken(side.token), { connections: CONNECTIONS, seconds: 2 });
  await database.analyze();
  const results: LoadResult[][] = sides.map(() => []);
  for (let round = 0; round < ROUNDS; round++) {
    for (const [index, side] of sides.entries()) {
      const result = await loadFromChild(resource, withToken(side.token), {
        connections: CONNECTIONS,
        seconds: SECONDS,
      });
      (results[index] as LoadResult[]).push(result);
      rows.push({
        round: round + 1,
        path: side.label,
        'calls/s': Math.round(result.calls / result.seconds),
        'p50 ms': result.p50,
        'p99 ms': result.p99,
        errors: result.errors,
      });
    }
  }
  await api.close();
  await platform.stop();
  await idp.stop();
  printTable(`Durable tools/call of greet, ${CONNECTIONS} connections, ${SECONDS} s per round`, rows);
  const rate = (index: number) =>
    median((results[index] as LoadResult[]).map((result) => result.calls / result.seconds));
  reportGoals({ CONNECTIONS, SECONDS, ROUNDS }, [
    {
      metric: 'durable tools/call with an OAuth JWT, median of rounds',
      unit: 'calls/s',
      rule: atLeastShareOfAnchor(0.95),
      ours: rate(1),
      anchor: { label: 'the same call with a static token, same run', value: rate(0) },
    },
  ]);
} finally {
  await database.drop();
}
process.exit(0);
