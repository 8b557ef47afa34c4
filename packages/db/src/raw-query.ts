import { CompiledQuery, type Kysely } from 'kysely';

/**
 * Raw SQL with `$1, $2, ...` parameters on a connection or transaction Kysely already holds: what a
 * tool's ctx.commit and a module route's mutation hand their effects as `query`, so a statement
 * written by hand runs in the same transaction as everything else.
 */
export function rawQuery(db: Kysely<unknown>) {
  return async <Row>(text: string, values: readonly unknown[] = []) => {
    const { rows, numAffectedRows } = await db.executeQuery<Row>(CompiledQuery.raw(text, [...values]));
    return { rows, rowCount: numAffectedRows === undefined ? rows.length : Number(numAffectedRows) };
  };
}
