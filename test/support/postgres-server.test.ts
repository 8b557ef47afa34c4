import { describe, expect, it } from 'vitest';
import { findPostgres } from './postgres-server.ts';

describe('the test harness finds PostgreSQL', () => {
  const dockerMustNotBeAsked = async () => {
    throw new Error('Docker should not be consulted when a URL is given');
  };

  it('uses TEST_DATABASE_URL first, then DATABASE_URL', async () => {
    const url = process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL ?? '';
    const fromTest = await findPostgres(
      { TEST_DATABASE_URL: url, DATABASE_URL: 'postgres://x@127.0.0.1:1/y' },
      dockerMustNotBeAsked,
    );
    expect(fromTest).toMatchObject({ adminUrl: url, source: 'TEST_DATABASE_URL' });
    const fromApp = await findPostgres({ DATABASE_URL: url }, dockerMustNotBeAsked);
    expect(fromApp).toMatchObject({ adminUrl: url, source: 'DATABASE_URL' });
  });

  it('says how to provide one when the given URL does not answer', async () => {
    await expect(
      findPostgres({ TEST_DATABASE_URL: 'postgres://x@127.0.0.1:1/y' }, dockerMustNotBeAsked),
    ).rejects.toThrow(
      /database unreachable at 127\.0\.0\.1:1\/y \(TEST_DATABASE_URL\).*Tests need PostgreSQL: set TEST_DATABASE_URL/,
    );
  });

  it('says how to provide one when there is no URL and no Docker engine', async () => {
    await expect(findPostgres({}, async () => false)).rejects.toThrow(
      'No PostgreSQL found. Tests need PostgreSQL: set TEST_DATABASE_URL (for example postgres://postgres@127.0.0.1:5432/postgres, a user allowed to CREATE DATABASE), or start a Docker engine so Testcontainers can run one.',
    );
  });
});
