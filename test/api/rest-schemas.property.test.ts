import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { rowCounts } from '../support/row-counts.ts';
import { type Platform, startApi, startPlatform } from '../support/task-platform.ts';

// The REST schemas through the real server: for arbitrary JSON in a field, the request succeeds
// exactly when the value is what the schema says — never coerced — and otherwise is a 400 with a
// stable code that writes nothing.
const database = useTestDatabase();
let platform: Platform;
let api: { app: FastifyInstance; close(): Promise<void> };
let app: FastifyInstance;
beforeAll(async () => {
  platform = await startPlatform(database.url);
  api = await startApi(platform, database.url);
  app = api.app;
});
afterAll(async () => {
  await api.close();
  await platform.stop();
});

// TG_MALFORMED_JSON too: the body parser refuses a "__proto__" key, which fc.jsonValue generates.
const REFUSALS = [
  'TG_REQUEST_INVALID',
  'TG_JSON_STRING_INVALID',
  'TG_JSON_NUMBER_INVALID',
  'TG_JSON_TOO_DEEP',
  'TG_MALFORMED_JSON',
];
/** Any JSON value, biased towards what a careless client sends for a number. */
const anyValue = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.integer({ min: -10, max: 3_000_000_000 }),
  fc.double(),
  fc.constantFrom(true, false, null, '1', '100', '', '1e2', [1], { value: 1 }, 0, -0, 1.0, 2.5, 1e308),
  fc.integer().map(String),
);
const isInt = (value: unknown, min: number, max: number): value is number =>
  typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max;
/** The value as the server receives it (JSON has no -0: it arrives as 0). */
const sent = (value: unknown) => (value === undefined ? undefined : JSON.parse(JSON.stringify(value)));

let sequence = 0;

describe('REST schemas, for any value of a field', () => {
  it('PUT /v1/inventory/{sku} sets exactly the integer given, or refuses and changes nothing', async () => {
    await fc.assert(
      fc.asyncProperty(anyValue, async (available) => {
        const sku = `sku-${sequence++}`;
        const before = await rowCounts(platform.db);
        const response = await app.inject({
          method: 'PUT',
          url: `/v1/inventory/${sku}`,
          headers: { 'content-type': 'application/json' },
          payload: JSON.stringify({ available }),
        });
        if (isInt(available, 0, 2_000_000_000)) {
          expect(response.statusCode).toBe(200);
          expect(response.json().available).toBe(sent(available));
          return;
        }
        expect(response.statusCode).toBe(400);
        expect(REFUSALS).toContain(response.json().code);
        expect(await rowCounts(platform.db)).toEqual(before);
      }),
      { numRuns: 300 },
    );
  });

  it('POST /v1/accounts/{account}/charges charges exactly the cents given, or refuses and charges nothing', async () => {
    await fc.assert(
      fc.asyncProperty(anyValue, async (cents) => {
        const before = await rowCounts(platform.db);
        const response = await app.inject({
          method: 'POST',
          url: '/v1/accounts/acct/charges',
          headers: { 'content-type': 'application/json', 'idempotency-key': `prop-${sequence++}` },
          payload: JSON.stringify({ cents }),
        });
        if (isInt(cents, 1, 100_000_000)) {
          expect(response.statusCode).toBe(201);
          expect(response.json().cents).toBe(sent(cents));
          return;
        }
        expect(response.statusCode).toBe(400);
        expect(REFUSALS).toContain(response.json().code);
        expect(await rowCounts(platform.db)).toEqual(before);
      }),
      { numRuns: 300 },
    );
  });

  it('POST /v1/tasks keeps exactly the ttlMs given, or refuses and creates nothing', async () => {
    await fc.assert(
      fc.asyncProperty(fc.option(anyValue, { nil: undefined }), async (ttlMs) => {
        const before = await rowCounts(platform.db);
        const response = await app.inject({
          method: 'POST',
          url: '/v1/tasks',
          headers: { 'content-type': 'application/json' },
          payload: JSON.stringify({
            tool: 'greet',
            arguments: { name: 'p' },
            ...(ttlMs === undefined ? {} : { ttlMs }),
          }),
        });
        if (ttlMs === undefined || isInt(ttlMs, 1, 7 * 24 * 3600 * 1000)) {
          expect(response.statusCode).toBe(201);
          expect(response.json().ttlMs).toBe(sent(ttlMs) ?? 3_600_000);
          return;
        }
        expect(response.statusCode).toBe(400);
        expect(REFUSALS).toContain(response.json().code);
        expect(await rowCounts(platform.db)).toEqual(before);
      }),
      { numRuns: 200 },
    );
  });

  it('GET /v1/tasks takes a limit that is the decimal digits of 1 to 1000, and nothing else', async () => {
    const limit = fc.oneof(
      fc.string({ maxLength: 6 }).filter((text) => text.isWellFormed()),
      fc.integer({ min: -5, max: 1_200 }).map(String),
      fc.double().map(String),
      fc.constantFrom('1e1', '1.0', '+1', '0x1', '01', ' 1', '1 ', 'true', '١٢'),
    );
    await fc.assert(
      fc.asyncProperty(limit, async (text) => {
        const response = await app.inject({ method: 'GET', url: `/v1/tasks?limit=${encodeURIComponent(text)}` });
        if (/^(?:[1-9][0-9]{0,2}|1000)$/.test(text)) {
          expect(response.statusCode).toBe(200);
          expect(response.json().tasks.length).toBeLessThanOrEqual(Number(text));
          return;
        }
        expect(response.statusCode).toBe(400);
        expect(REFUSALS).toContain(response.json().code);
      }),
      { numRuns: 300 },
    );
  });
});
