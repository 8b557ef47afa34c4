import { testClient } from './pg-clients.ts';

/**
 * The structure of a database (tables, columns, constraints, indexes, functions, triggers, types)
 * as sorted text lines, for comparing two databases. Data and dates are left out.
 */
export async function schemaFingerprint(
  url: string,
  schemas: readonly string[] = ['public', 'pgboss'],
): Promise<string[]> {
  const client = testClient({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ line: string }>(
      `SELECT 'column ' || table_schema || '.' || table_name || '.' || column_name || ' ' || data_type || ' '
              || is_nullable || ' ' || coalesce(column_default, '') || ' ' || coalesce(is_identity, '') AS line
         FROM information_schema.columns WHERE table_schema = ANY($1)
       UNION ALL
       SELECT 'constraint ' || n.nspname || '.' || c.conrelid::regclass::text || '.' || c.conname || ' ' || pg_get_constraintdef(c.oid)
         FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace WHERE n.nspname = ANY($1)
       UNION ALL
       SELECT 'index ' || schemaname || '.' || indexname || ' ' || indexdef FROM pg_indexes WHERE schemaname = ANY($1)
       UNION ALL
       SELECT 'function ' || n.nspname || '.' || p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ') ' || md5(p.prosrc)
         FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = ANY($1)
       UNION ALL
       SELECT 'trigger ' || n.nspname || '.' || t.tgname || ' ' || pg_get_triggerdef(t.oid)
         FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = ANY($1) AND NOT t.tgisinternal
       UNION ALL
       SELECT 'type ' || n.nspname || '.' || t.typname || ' ' || coalesce(string_agg(e.enumlabel, ',' ORDER BY e.enumsortorder), '')
         FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace LEFT JOIN pg_enum e ON e.enumtypid = t.oid
        WHERE n.nspname = ANY($1) AND t.typtype = 'e' GROUP BY n.nspname, t.typname`,
      [schemas],
    );
    // pg-boss keeps daily partitions of its stats table; their names carry the date.
    return rows.map((row) => row.line.replace(/_\d{8}\b/g, '_YYYYMMDD')).sort();
  } finally {
    await client.end();
  }
}
