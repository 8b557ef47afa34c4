import type { Database } from '@taskgate/db';
import { type Kysely, type RawBuilder, sql } from 'kysely';

/** What a statement's plan reads: every node type, and every index a node names. */
export interface QueryPlan {
  readonly nodes: readonly string[];
  readonly indexes: readonly string[];
}

/**
 * EXPLAIN (FORMAT JSON) of a statement, walked: the tests that assert a read is index-backed on a
 * large table ask "no Seq Scan" and "this index" of it.
 */
export async function planOf(db: Kysely<Database>, statement: RawBuilder<unknown>): Promise<QueryPlan> {
  const { rows } = await sql<{ 'QUERY PLAN': unknown }>`EXPLAIN (FORMAT JSON) ${statement}`.execute(db);
  const indexes = new Set<string>();
  const nodes: string[] = [];
  const walk = (node: Record<string, unknown>) => {
    nodes.push(String(node['Node Type']));
    if (typeof node['Index Name'] === 'string') indexes.add(node['Index Name']);
    for (const child of (node.Plans as Record<string, unknown>[] | undefined) ?? []) walk(child);
  };
  const [explained] = (rows[0]?.['QUERY PLAN'] ?? []) as { Plan: Record<string, unknown> }[];
  if (explained === undefined) throw new Error('EXPLAIN returned no plan');
  walk(explained.Plan);
  return { nodes, indexes: [...indexes] };
}
