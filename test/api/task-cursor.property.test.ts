import { decodeCursor, encodeCursor } from '@taskgate/api';
import { isTaskgateError } from '@taskgate/errors';
import fc from 'fast-check';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { testClient } from '../support/pg-clients.ts';

// The cursor codec, against the Postgres that casts what it decodes.
const database = useTestDatabase();
let client: pg.Client;
beforeAll(async () => {
  client = testClient({ connectionString: database.url });
  await client.connect();
});
afterAll(async () => {
  await client.end();
});

const pad = (n: number, width = 2) => String(n).padStart(width, '0');
const uuid = fc.uuid();
/**
 * Timestamps in the shape Postgres prints, from fields each one past its range at either end (so
 * most are possible, and the impossible ones sit at every edge: month 13, 31 April, 29 February,
 * hour 24, second 60, offset 16 hours).
 */
const wildTimestamp = fc
  .record({
    year: fc.oneof(fc.integer({ min: 0, max: 9999 }), fc.constantFrom(1900, 2000, 2024, 2026)),
    month: fc.integer({ min: 0, max: 13 }),
    day: fc.integer({ min: 0, max: 32 }),
    hour: fc.integer({ min: 0, max: 24 }),
    minute: fc.integer({ min: 0, max: 60 }),
    second: fc.integer({ min: 0, max: 60 }),
    fraction: fc.option(fc.stringMatching(/^[0-9]{1,6}$/), { nil: undefined }),
    sign: fc.constantFrom('+', '-'),
    offsetHours: fc.integer({ min: 0, max: 16 }),
    offsetMinutes: fc.option(fc.integer({ min: 0, max: 60 }), { nil: undefined }),
  })
  .map(
    (t) =>
      `${pad(t.year, 4)}-${pad(t.month)}-${pad(t.day)} ${pad(t.hour)}:${pad(t.minute)}:${pad(t.second)}` +
      `${t.fraction === undefined ? '' : `.${t.fraction}`}${t.sign}${pad(t.offsetHours)}` +
      `${t.offsetMinutes === undefined ? '' : `:${pad(t.offsetMinutes)}`}`,
  );

function decodeOrCode(text: string): { cursor: ReturnType<typeof decodeCursor> } | { code: string } {
  try {
    return { cursor: decodeCursor(text) };
  } catch (error) {
    if (isTaskgateError(error)) return { code: error.code };
    throw error;
  }
}

describe('the task cursor codec', () => {
  it('throws nothing but TG_CURSOR_INVALID for any string at all', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.base64String()), (text) => {
        const decoded = decodeOrCode(text);
        if ('code' in decoded) expect(decoded.code).toBe('TG_CURSOR_INVALID');
      }),
      { numRuns: 2_000 },
    );
  });

  it('throws nothing but TG_CURSOR_INVALID for any JSON a client could encode as a cursor', () => {
    const arbitraryJson = fc.oneof(
      fc.jsonValue(),
      fc.tuple(fc.jsonValue(), fc.jsonValue()),
      fc.tuple(fc.string(), fc.string()),
      fc.tuple(wildTimestamp, fc.oneof(uuid, fc.string())),
    );
    fc.assert(
      fc.property(arbitraryJson, (value) => {
        const decoded = decodeOrCode(Buffer.from(JSON.stringify(value)).toString('base64url'));
        if ('code' in decoded) expect(decoded.code).toBe('TG_CURSOR_INVALID');
      }),
      { numRuns: 2_000 },
    );
  });

  it('decodes only timestamps Postgres can cast: a well-formed but impossible one is refused, never cast', async () => {
    await fc.assert(
      fc.asyncProperty(wildTimestamp, uuid, async (timestamp, id) => {
        const decoded = decodeOrCode(encodeCursor({ createdAt: timestamp, id }));
        if ('code' in decoded) return;
        const { rows } = await client.query<{ ok: boolean }>(
          'SELECT $1::timestamptz IS NOT NULL AND $2::uuid IS NOT NULL AS ok',
          [decoded.cursor.createdAt, decoded.cursor.id],
        );
        expect(rows[0]?.ok).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('round-trips every timestamp Postgres prints, in any time zone', async () => {
    const zones = [
      'UTC',
      'Asia/Kolkata',
      'America/St_Johns',
      'Pacific/Kiritimati',
      'Pacific/Pago_Pago',
      'Europe/Amsterdam',
    ];
    await fc.assert(
      fc.asyncProperty(
        // Microseconds from 0001-01-02 to 9998-12-31 (four-digit years in every zone here; a task's
        // created_at is now()); Amsterdam before 1937 prints a seconds offset (+00:19:32).
        fc.bigInt({ min: -62_135_510_400_000_000n, max: 253_370_764_799_999_999n }),
        fc.constantFrom(...zones),
        uuid,
        async (micros, zone, id) => {
          await client.query(`SET TimeZone = '${zone}'`);
          const { rows } = await client.query<{ printed: string }>(
            "SELECT (timestamptz 'epoch' + $1::bigint * interval '1 microsecond')::text AS printed",
            [micros.toString()],
          );
          const printed = rows[0]?.printed as string;
          const cursor = { createdAt: printed, id };
          expect(decodeCursor(encodeCursor(cursor))).toEqual(cursor);
        },
      ),
      { numRuns: 500 },
    );
  });
});
