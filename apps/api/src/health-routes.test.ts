import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { type ReadinessReport, registerHealthRoutes } from './health-routes.ts';

function app(report: () => ReadinessReport) {
  const fastify = Fastify();
  registerHealthRoutes(fastify, async () => report());
  return fastify;
}

describe('health routes', () => {
  it('/healthz answers 200 without consulting readiness', async () => {
    let consulted = false;
    const fastify = app(() => {
      consulted = true;
      return { ready: false, checks: {} };
    });
    const response = await fastify.inject({ method: 'GET', url: '/healthz' });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ status: 'ok' });
    expect(consulted).toBe(false);
  });

  it('/readyz answers 200 with the checks when ready', async () => {
    const response = await app(() => ({ ready: true, checks: { api: 'ok', database: 'ok' } })).inject('/readyz');
    expect(response.statusCode).toBe(200);
    expect(response.headers['cache-control']).toBe('no-store');
    expect(response.json()).toEqual({ status: 'ready', checks: { api: 'ok', database: 'ok' } });
  });

  it('/readyz answers 503 with the reason when not ready', async () => {
    const response = await app(() => ({
      ready: false,
      reason: 'shutting down',
      checks: { api: 'stopping', database: 'ok' },
    })).inject('/readyz');
    expect(response.statusCode).toBe(503);
    expect(response.json()).toEqual({
      status: 'not_ready',
      reason: 'shutting down',
      checks: { api: 'stopping', database: 'ok' },
    });
  });
});
