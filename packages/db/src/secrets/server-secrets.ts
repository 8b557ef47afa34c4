import { randomBytes } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import type { Database } from '../schema.ts';

/** The bytes of a new secret: 256 bits. */
const SECRET_BYTES = 32;

/**
 * The named secret every instance shares: the one already stored, or a new one. Two instances
 * starting at once race on the INSERT; ON CONFLICT makes one win, and both read the winner's.
 */
export async function serverSecret(db: Kysely<Database>, name: string): Promise<Buffer> {
  await sql`
    INSERT INTO server_secrets (name, secret) VALUES (${name}, ${randomBytes(SECRET_BYTES)})
    ON CONFLICT (name) DO NOTHING`.execute(db);
  const { rows } = await sql<{ secret: Buffer }>`SELECT secret FROM server_secrets WHERE name = ${name}`.execute(db);
  const secret = rows[0]?.secret;
  if (!secret) throw new Error(`server secret ${name} was not stored`);
  return secret;
}
