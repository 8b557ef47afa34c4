import {
  createKysely,
  createPool,
  type Database,
  DatabaseSessionSignals,
  SESSION_CHANNEL,
  type SessionSignal,
} from '@taskgate/db';
import { type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { waitForTask } from '../support/task-platform.ts';

// Session signals over NOTIFY (packages/db/src/sessions/mcp-session-signals.ts): any payload on the
// channel may come from anyone with database access, so only well-formed signals reach a handler,
// a handler that throws is logged and never takes the process down, and an instance does not hear
// its own signals.
const database = useTestDatabase();
let db: Kysely<Database>;
const warnings: string[] = [];
const logger = { warn: (_fields: Record<string, unknown>, message: string) => warnings.push(message) };
let listening: DatabaseSessionSignals;
let sending: DatabaseSessionSignals;

beforeAll(async () => {
  db = createKysely(createPool(database.url, { applicationName: 'session-signals-test' }));
  listening = new DatabaseSessionSignals({ db, connectionString: database.url, applicationName: 'signals-a', logger });
  sending = new DatabaseSessionSignals({ db, connectionString: database.url, applicationName: 'signals-b', logger });
  await listening.start();
  await sending.start();
});
afterAll(async () => {
  await listening.stop();
  await sending.stop();
  await db.destroy();
});

const notify = (payload: string) => sql`SELECT pg_notify(${SESSION_CHANNEL}, ${payload})`.execute(db);

describe('DatabaseSessionSignals', () => {
  it('hands a handler only well-formed signals of other instances; a throwing handler is logged', async () => {
    const heard: SessionSignal[] = [];
    const own: SessionSignal[] = [];
    const stopHeard = listening.onSignal((signal) => heard.push(signal));
    const stopOwn = sending.onSignal((signal) => own.push(signal));
    const stopThrowing = listening.onSignal(() => {
      throw new Error('handler bug');
    });
    for (const junk of [
      'not json',
      '[]',
      'null',
      '{"kind":"cancel"}',
      '{"kind":"cancel","tenantId":"t","sessionId":"s","requestId":{"a":1},"reason":null}',
      '{"kind":"cancel","tenantId":"t","sessionId":"s","requestId":1,"reason":5}',
      '{"kind":"response","tenantId":"t","sessionId":"s","message":"x"}',
      '{"kind":"shutdown","tenantId":"t","sessionId":"s"}',
      '{"kind":"cancel","tenantId":7,"sessionId":"s","requestId":1,"reason":null}',
    ]) {
      await notify(junk);
    }
    sending.send({ kind: 'cancel', tenantId: 'acme', sessionId: 's1', requestId: 5, reason: 'stop' });
    await waitForTask(
      async () => heard.length,
      (n) => n >= 1,
    );
    expect(heard).toEqual([{ kind: 'cancel', tenantId: 'acme', sessionId: 's1', requestId: 5, reason: 'stop' }]);
    expect(warnings).toContain('a session signal could not be handled');
    // The sender does not hear itself.
    expect(own).toEqual([]);
    // Too big for NOTIFY: said, and not sent.
    sending.send({ kind: 'response', tenantId: 'acme', sessionId: 's1', message: { pad: 'x'.repeat(8_000) } });
    expect(warnings.some((message) => message.includes('cannot reach the other instances'))).toBe(true);
    stopHeard();
    stopOwn();
    stopThrowing();
  });
});
