import type { AddressInfo } from 'node:net';
import { publishTools, registerInstance } from '@taskgate/db';
import { toolCatalogEntry } from '@taskgate/reliability';
import { defineTool } from '@taskgate/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { restScopeOf } from '../../apps/api/src/http/oauth/scopes.ts';
import { seriousViolations } from '../support/browser.ts';
import { useConsoleBrowser } from '../support/console-browser.ts';
import { useTestDatabase } from '../support/databases.ts';
import { expectProblem } from '../support/problems.ts';
import { barrier, type Platform, serveApi, startPlatform, waitForTask } from '../support/task-platform.ts';

// The workers page and GET /v1/instances behind it: the fleet's instances, the tools each serves
// with their fingerprints (version skew shown), the tasks each worker holds, their heartbeats.
const database = useTestDatabase();
const ACME = 'acme-workers-token-0123456789';
const held = barrier();
const holding = defineTool({
  name: 'holding',
  description: 'Holds its worker until the test lets go.',
  inputSchema: { type: 'object' },
  retry: 'safe',
  async handler() {
    await held.promise;
    return { content: [] };
  },
});

let platform: Platform;
let api: Awaited<ReturnType<typeof serveApi>>;
let origin: string;
const ui = useConsoleBrowser(() => origin);
let workerId: string;

beforeAll(async () => {
  platform = await startPlatform(database.url, { tools: [holding] as never });
  const worker = await platform.startWorker();
  workerId = worker.workerId;
  api = await serveApi(platform, database.url, { tokens: new Map([[ACME, 'acme']]) });
  origin = `http://127.0.0.1:${(api.app.server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  held.resolve();
  await api?.close();
  await platform?.stop();
});

const instances = async () => {
  const answer = await api.app.inject({
    method: 'GET',
    url: '/v1/instances',
    headers: { authorization: `Bearer ${ACME}` },
  });
  expect(answer.statusCode, answer.body).toBe(200);
  return answer.json() as {
    instances: {
      id: string;
      kind: string;
      state: string;
      holding: number;
      tools: { name: string; fingerprint: string }[];
    }[];
    skew: { tool: string; fingerprints: string[] }[];
  };
};

describe('GET /v1/instances', () => {
  it('lists the live worker with its tools and fingerprints and the tasks it holds', async () => {
    const task = await platform.service.create('acme', { tool: 'holding', arguments: {} });
    await waitForTask(
      () => platform.service.get('acme', task.id),
      (read) => read.startedAt !== null,
    );
    const fleet = await instances();
    const worker = fleet.instances.find((instance) => instance.id === workerId);
    expect(worker).toMatchObject({ kind: 'worker', state: 'live', holding: 1 });
    const names = worker?.tools.map((tool) => tool.name) ?? [];
    expect(names).toContain('holding');
    expect(names).toContain('greet');
    expect(worker?.tools.every((tool) => /^[0-9a-f]{64}$/.test(tool.fingerprint))).toBe(true);
    expect(fleet.skew).toEqual([]);
  });

  it('shows version skew: a live instance serving another definition under the same name', async () => {
    await registerInstance(platform.db, { id: 'worker-old-build', kind: 'worker', host: 'old-host', pid: 4242 });
    const older = toolCatalogEntry({
      name: 'greet',
      description: 'an older greet',
      inputSchema: { type: 'object' },
      retry: 'safe',
    });
    await publishTools(platform.db, 'worker-old-build', [older]);
    const fleet = await instances();
    const skew = fleet.skew.find((entry) => entry.tool === 'greet');
    expect(skew?.fingerprints).toHaveLength(2);
    expect(skew?.fingerprints).toContain(older.fingerprint);
    expect(fleet.instances.find((instance) => instance.id === 'worker-old-build')).toMatchObject({
      state: 'live',
      holding: 0,
      tools: [{ name: 'greet', fingerprint: older.fingerprint }],
    });
  });

  it('needs the admin scope, and a token', async () => {
    expect(restScopeOf('GET', '/v1/instances')).toBe('admin');
    expectProblem(await api.app.inject({ method: 'GET', url: '/v1/instances' }), 401, 'TG_UNAUTHORIZED');
  });
});

describe('the workers page', () => {
  it('shows the fleet, the skew and what each worker holds, accessibly', async () => {
    const page = await ui.signIn(ACME, '/ui/workers');
    const row = page.locator(`tr[data-id="${workerId}"]`);
    await row.waitFor();
    expect(await row.getAttribute('data-state')).toBe('live');
    await row.getByText('1 task').waitFor();
    await row.getByText('holding').first().waitFor();
    await page.getByRole('status').filter({ hasText: 'Version skew' }).waitFor();
    expect(await page.locator('li.skewed code', { hasText: 'greet' }).count()).toBeGreaterThan(0);
    expect(await page.getByRole('link', { name: 'Workers' }).getAttribute('aria-current')).toBe('page');
    expect(await seriousViolations(page)).toEqual([]);
  });
});
