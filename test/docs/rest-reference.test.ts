import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/cli.ts';
import { useTestDatabase } from '../support/databases.ts';
import { type Platform, startApi, startPlatform } from '../support/task-platform.ts';

const database = useTestDatabase();
const reference = readFileSync(path.join(REPO_ROOT, 'docs/reference/rest.md'), 'utf8');
const METHODS = ['get', 'put', 'post', 'patch', 'delete', 'head', 'options'];

let platform: Platform;
let api: Awaited<ReturnType<typeof startApi>>;
beforeAll(async () => {
  platform = await startPlatform(database.url);
  api = await startApi(platform, database.url);
});
afterAll(async () => {
  await api?.close();
  await platform?.stop();
});

describe('docs/reference/rest.md', () => {
  it('names every method and path of the OpenAPI document the API serves', async () => {
    const response = await api.app.inject({ method: 'GET', url: '/openapi.json' });
    expect(response.statusCode).toBe(200);
    const { paths } = response.json() as { paths: Record<string, Record<string, unknown>> };
    const operations = Object.entries(paths).flatMap(([route, item]) =>
      Object.keys(item)
        .filter((method) => METHODS.includes(method))
        .map((method) => `${method.toUpperCase()} ${route}`),
    );
    expect(operations).toEqual(expect.arrayContaining(['POST /v1/tasks', 'GET /v1/tasks/{id}']));
    expect(operations.filter((operation) => !reference.includes(`\`${operation}\``))).toEqual([]);
  });
});
