import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { registerModuleRoutes } from './module-routes.ts';

const module = (routes: (app: never) => void) => ({
  name: 'broken',
  file: '/srv/broken.ts',
  tools: [],
  migrationsDir: null,
  routes: routes as never,
  errors: {},
});
const options = { db: {} as never, service: {} as never, retentionMs: 60_000 };

describe('registerModuleRoutes', () => {
  it('names the module when its routes throw', async () => {
    const app = Fastify();
    await expect(
      registerModuleRoutes(
        app,
        [
          module(() => {
            throw new Error('boom');
          }),
        ],
        options,
      ),
    ).rejects.toMatchObject({
      code: 'TG_TOOL_MODULE_INVALID',
      message: 'tool module /srv/broken.ts: its routes did not register: boom',
    });
  });

  it('names the module when a route collides with one already there', async () => {
    const app = Fastify();
    app.get('/v1/tasks', async () => ({}));
    await expect(
      registerModuleRoutes(
        app,
        [
          module((scope: never) =>
            (scope as { get: (path: string, h: () => unknown) => void }).get('/v1/tasks', () => ({})),
          ),
        ],
        options,
      ),
    ).rejects.toMatchObject({ code: 'TG_TOOL_MODULE_INVALID' });
  });
});
