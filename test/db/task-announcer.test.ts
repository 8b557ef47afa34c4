import { createKysely, createPool, TASK_CHANNEL, TaskAnnouncer, type TaskNotification } from '@taskgate/db';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { testClient } from '../support/pg-clients.ts';
import { waitForTask } from '../support/task-platform.ts';

const database = useTestDatabase();
let listener: pg.Client;
const heard: TaskNotification[] = [];

beforeAll(async () => {
  listener = testClient({ connectionString: database.url });
  await listener.connect();
  listener.on('notification', (message) => {
    if (message.channel === TASK_CHANNEL && message.payload) heard.push(JSON.parse(message.payload));
  });
  await listener.query(`LISTEN ${TASK_CHANNEL}`);
});

afterAll(async () => {
  await listener.end();
});

/** Waits until `count` notifications have arrived. */
const heardCount = (count: number) =>
  waitForTask(
    async () => heard.length,
    (length) => length >= count,
    5_000,
  );

describe('TaskAnnouncer', () => {
  it('sends each announced change as a task notification, in order, skipping absent tasks', async () => {
    heard.length = 0;
    const db = createKysely(createPool(database.url, { applicationName: 'announcer-test', max: 2 }));
    const announcer = new TaskAnnouncer(db);
    const task = (id: string, status: 'working' | 'completed') => ({ id, tenantId: 'acme', status });
    announcer.changed('created', [task('00000000-0000-0000-0000-000000000001', 'working'), null]);
    announcer.changed('status', [task('00000000-0000-0000-0000-000000000001', 'completed')]);
    await announcer.settled();
    await heardCount(2);
    expect(heard).toEqual([
      { id: '00000000-0000-0000-0000-000000000001', tenant: 'acme', event: 'created', status: 'working' },
      { id: '00000000-0000-0000-0000-000000000001', tenant: 'acme', event: 'status', status: 'completed' },
    ]);
    await db.destroy();
  });

  it('carries the value in a progress notification, unless it would not fit a payload', async () => {
    heard.length = 0;
    const db = createKysely(createPool(database.url, { applicationName: 'announcer-test', max: 2 }));
    const announcer = new TaskAnnouncer(db);
    const id = '00000000-0000-0000-0000-000000000003';
    const at = (value: number, message: string | null) => ({
      id,
      tenantId: 'acme',
      status: 'working' as const,
      progress: { value, total: 10, message },
    });
    announcer.changed('progress', [at(1, 'one'), at(2, 'é'.repeat(5_000))]);
    // A status change never carries progress, whatever the record holds.
    announcer.changed('status', [at(3, null)]);
    await announcer.settled();
    await heardCount(3);
    expect(heard).toEqual([
      { id, tenant: 'acme', event: 'progress', status: 'working', progress: { value: 1, total: 10, message: 'one' } },
      { id, tenant: 'acme', event: 'progress', status: 'working' },
      { id, tenant: 'acme', event: 'status', status: 'working' },
    ]);
    await db.destroy();
  });

  it('logs and drops what it cannot send, and keeps announcing afterwards', async () => {
    heard.length = 0;
    const warnings: string[] = [];
    const pool = createPool(database.url, { applicationName: 'announcer-test', max: 1 });
    const db = createKysely(pool);
    const announcer = new TaskAnnouncer(db, { logger: { warn: (_fields, message) => warnings.push(message) } });
    // A payload over Postgres's 8000-byte limit makes pg_notify raise: the statement fails.
    announcer.changed('status', [{ id: 'x'.repeat(9_000), tenantId: 'acme', status: 'working' }]);
    await announcer.settled();
    expect(warnings).toEqual(['task notifications not sent; listeners will see the changes at their next poll']);
    announcer.changed('progress', [
      { id: '00000000-0000-0000-0000-000000000002', tenantId: 'acme', status: 'working' },
    ]);
    await announcer.settled();
    await heardCount(1);
    expect(heard[0]?.event).toBe('progress');
    await db.destroy();
  });
});
