import { createHash } from 'node:crypto';
import pg from 'pg';

/** Named statements a connection keeps at most; past it, new texts run unnamed as before. */
export const MAX_PREPARED_PER_CONNECTION = 256;

/**
 * A pg Client that runs every parameterized statement as a named prepared statement, named by a
 * hash of its text. node-pg sends unnamed statements, which Postgres parses and plans on every
 * execution; for the set-based statements of the hot paths (a task's create, its attempt's start
 * and finish, a one-row mutation with its key and outbox row) planning cost as much server time as
 * running them: measured with pgbench on such a statement, 0.9k → 1.6k per second on one connection.
 * A prepared statement is parsed once per connection and, after five executions, Postgres may
 * settle on a generic plan.
 *
 * Only statements with parameters are prepared (BEGIN, COMMIT and other bare texts still go by
 * the simple protocol), and a connection prepares at most MAX_PREPARED_PER_CONNECTION texts, so
 * statements built with a varying shape cannot grow a connection's memory without bound.
 */
export class PreparingClient extends pg.Client {
  #prepared = 0;
  #executions = 0;

  // biome-ignore lint/suspicious/noExplicitAny: node-pg's query() has a dozen overloads; this forwards them all.
  override query(config: any, values?: any, callback?: any): any {
    if (typeof config === 'string' && Array.isArray(values) && values.length > 0) {
      const name = statementName(config);
      const known = name in preparedStatements(this);
      if (known || this.#prepared < MAX_PREPARED_PER_CONNECTION) {
        if (!known) this.#prepared += 1;
        this.#executions += 1;
        if (REPLAN_AFTER_EXECUTIONS.includes(this.#executions)) {
          // Queued ahead of this statement on the same connection. It cannot fail in a healthy
          // transaction; in an aborted one, the statement after it fails as it would have anyway.
          super.query('DISCARD PLANS').catch(() => {});
        }
        return super.query({ name, text: config, values }, callback);
      }
    }
    return super.query(config, values, callback);
  }
}

/**
 * A connection drops its cached plans (DISCARD PLANS: the statements stay prepared) when its
 * prepared executions reach each of these counts. After five runs Postgres may keep a generic plan
 * for a statement, made from the table sizes of that moment, until the next ANALYZE. On a new
 * database those sizes are a few rows: the generic plan that suits them (a partial index on status,
 * a sequential scan) stayed in use as the tables grew, until autovacuum's first ANALYZE about a
 * minute later, and the durable MCP path ran at half speed meanwhile (measured: 839 calls/s, 1,757
 * after an ANALYZE). Plans made again later are made from the sizes of then. Three times in a
 * connection's life, early, costs nothing measurable once the tables are grown.
 */
export const REPLAN_AFTER_EXECUTIONS: readonly number[] = [100, 1_000, 10_000];

const names = new Map<string, string>();

/** tg_ and 20 bytes of SHA-1 of the text: unique per text, within Postgres's 63-byte name limit. */
function statementName(text: string): string {
  let name = names.get(text);
  if (name === undefined) {
    name = `tg_${createHash('sha1').update(text).digest('hex')}`;
    // Texts come from the code, not from data; the cap only guards against a pathological caller.
    if (names.size < 10_000) names.set(text, name);
  }
  return name;
}

function preparedStatements(client: pg.Client): Record<string, string> {
  const connection = (client as unknown as { connection: { parsedStatements: Record<string, string> } }).connection;
  return connection.parsedStatements;
}

/**
 * Addresses whose connections all share one backend session (the embedded Postgres in this
 * process). Named statements there would collide across connections, so pools to them stay unnamed.
 */
const sharedSessions = new Set<string>();

export function markSharedSession(host: string, port: number): () => void {
  const address = `${host}:${port}`;
  sharedSessions.add(address);
  return () => sharedSessions.delete(address);
}

export function isSharedSession(connectionString: string): boolean {
  try {
    const url = new URL(connectionString);
    return sharedSessions.has(`${url.hostname}:${url.port || '5432'}`);
  } catch {
    return false;
  }
}
