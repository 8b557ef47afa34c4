import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../../../test/support/databases.ts';
import { type HealthServer, type HealthServerOptions, startHealthServer } from './health-server.ts';
import { createLogger } from './logger.ts';

const database = useTestDatabase({ empty: true });
const servers: HealthServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.stop()));
});

async function probe(options: Partial<HealthServerOptions> = {}): Promise<HealthServer> {
  const server = await startHealthServer({
    host: '127.0.0.1',
    port: 0,
    connectionString: database.url,
    checks: () => ({ worker: 'ok', relay: 'ok' }),
    stopping: () => false,
    logger: createLogger('silent'),
    ...options,
  });
  servers.push(server);
  return server;
}

async function get(url: string, init: RequestInit = {}) {
  const response = await fetch(url, init);
  return { status: response.status, headers: response.headers, body: await response.json() };
}

describe('the health probe of processes without the api role', () => {
  it('answers /healthz and /readyz as the API does when every role is up and the database answers', async () => {
    const { url } = await probe();
    expect(await get(`${url}/healthz`)).toMatchObject({ status: 200, body: { status: 'ok' } });
    const ready = await get(`${url}/readyz`);
    expect(ready).toMatchObject({
      status: 200,
      body: { status: 'ready', checks: { worker: 'ok', relay: 'ok', database: 'ok' } },
    });
    expect(ready.headers.get('cache-control')).toBe('no-store');
  });

  it('is not ready while a role starts, while shutting down, or when the database does not answer', async () => {
    const states: Record<string, 'ok' | 'starting'> = { worker: 'starting' };
    let stopping = false;
    const { url } = await probe({ checks: () => ({ ...states }), stopping: () => stopping });
    expect(await get(`${url}/readyz`)).toMatchObject({
      status: 503,
      body: { status: 'not_ready', reason: 'worker starting', checks: { worker: 'starting', database: 'ok' } },
    });
    states.worker = 'ok';
    expect((await get(`${url}/readyz`)).status).toBe(200);
    stopping = true;
    expect(await get(`${url}/readyz`)).toMatchObject({
      status: 503,
      body: { reason: 'shutting down', checks: { worker: 'stopping' } },
    });
    // Alive all along: liveness never depends on the roles or the database.
    expect((await get(`${url}/healthz`)).status).toBe(200);

    const unreachable = await probe({ connectionString: 'postgres://postgres@127.0.0.1:1/postgres' });
    expect(await get(`${unreachable.url}/readyz`)).toMatchObject({
      status: 503,
      body: { reason: 'database failing', checks: { database: 'failing' } },
    });
    expect((await get(`${unreachable.url}/healthz`)).status).toBe(200);
  });

  it('answers other paths 404 and other methods 405', async () => {
    const { url } = await probe();
    expect((await get(`${url}/debug`)).status).toBe(404);
    // A target that is no URL path is refused, and the process goes on answering.
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(Number(new URL(url).port), '127.0.0.1', () => {
        socket.end('GET // HTTP/1.1\r\nHost: probe\r\nConnection: close\r\n\r\n');
      });
      let text = '';
      socket.on('data', (chunk) => {
        text += chunk;
      });
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    expect(raw).toMatch(/^HTTP\/1\.1 400 /);
    expect((await get(`${url}/healthz`)).status).toBe(200);
    // /metrics answers even where the database-wide figures cannot be read (an empty database).
    const metrics = await fetch(`${url}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toMatch(/^taskgate_metrics_database_up 0$/m);
    const post = await get(`${url}/readyz`, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
  });

  it('a port in use fails with TG_STARTUP_FAILED naming TASKGATE_HEALTH_PORT', async () => {
    const taken = new URL((await probe()).url).port;
    await expect(probe({ port: Number(taken) })).rejects.toMatchObject({
      code: 'TG_STARTUP_FAILED',
      message: expect.stringMatching(/TASKGATE_HEALTH_PORT.*EADDRINUSE/),
    });
  });

  it('refuses /metrics in a process that asks for tokens when no metrics token is set', async () => {
    const { url } = await probe({ tokensRequired: true });
    const none = await fetch(`${url}/metrics`);
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer realm="taskgate-metrics"');
    await none.body?.cancel();
    expect((await get(`${url}/healthz`)).status).toBe(200);
    // Without tokens (loopback only, like the API), it stays open.
    const open = await fetch(`${(await probe()).url}/metrics`);
    expect(open.status).toBe(200);
    await open.body?.cancel();
  });

  it('asks for TASKGATE_METRICS_TOKEN on /metrics when it is set, and only there', async () => {
    const token = 'metrics-token-0123456789';
    const { url } = await probe({ metricsToken: token });
    const none = await fetch(`${url}/metrics`);
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer realm="taskgate-metrics"');
    await none.body?.cancel();
    expect((await get(`${url}/metrics`, { headers: { authorization: 'Bearer not-the-metrics-token' } })).status).toBe(
      401,
    );
    const scraped = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
    expect(scraped.status).toBe(200);
    expect(await scraped.text()).toMatch(/^taskgate_metrics_database_up /m);
    expect((await get(`${url}/healthz`)).status).toBe(200);
  });
});
