import { userInfo } from 'node:os';
import {
  createKysely,
  createPool,
  findReconciliationItem,
  isReconciliationItemId,
  listReconciliationItems,
  loadMigrations,
  MigrationRunner,
  type ReconciliationFilter,
  type ReconciliationItem,
  resolveReconciliationItem,
} from '@taskgate/db';
import { TaskgateError } from '@taskgate/errors';
import type { Config } from '../config.ts';
import { openDatabase } from '../database.ts';
import type { Logger } from '../logger.ts';
import { formatTable, printable } from '../terminal-text.ts';
import type { Output } from './migrate.ts';

export type ReconcileArgs =
  | {
      readonly action: 'list';
      readonly state: ReconciliationFilter;
      readonly tenant: string | null;
      readonly limit: number;
      readonly json: boolean;
    }
  | { readonly action: 'show'; readonly id: string; readonly json: boolean }
  | { readonly action: 'resolve'; readonly id: string; readonly note: string; readonly by: string | null };

/**
 * `taskgate reconcile list|show|resolve`: an operator's view of the reconciliation items of every
 * tenant (the REST routes show a tenant its own), straight from DATABASE_URL or the embedded
 * database.
 */
export async function runReconcile(args: ReconcileArgs, config: Config, logger: Logger, out: Output): Promise<number> {
  const database = await openDatabase(config, logger);
  const pool = createPool(database.connectionString, { applicationName: 'taskgate-reconcile', max: 2 });
  const db = createKysely(pool);
  try {
    await assertReconcilable(database.connectionString, logger);
    switch (args.action) {
      case 'list': {
        const items = await listReconciliationItems(db, {
          tenantId: args.tenant,
          filter: args.state,
          limit: args.limit,
        });
        if (args.json) out.write(JSON.stringify(items.map(itemJson), null, 2));
        else for (const line of listTable(items, args.state)) out.write(line);
        return 0;
      }
      case 'show': {
        const item = await findReconciliationItem(db, null, args.id);
        if (item === null) throw notFound(args.id);
        if (args.json) out.write(JSON.stringify(itemJson(item), null, 2));
        else for (const line of itemLines(item)) out.write(line);
        return 0;
      }
      case 'resolve': {
        const by = args.by ?? operatorName();
        const outcome = await resolveReconciliationItem(db, {
          tenantId: null,
          id: args.id,
          resolution: args.note,
          resolvedBy: by,
        });
        if (outcome.kind === 'not-found') throw notFound(args.id);
        if (outcome.kind === 'already-resolved') {
          const { item } = outcome;
          throw new TaskgateError(
            'TG_RECONCILIATION_ITEM_RESOLVED',
            `item ${args.id} was resolved already, by ${JSON.stringify(item.resolvedBy)} at ${item.resolvedAt?.toISOString()}: ${item.resolution}`,
          );
        }
        out.write(`resolved item ${args.id} (task ${outcome.item.taskId}) as ${JSON.stringify(by)}`);
        return 0;
      }
    }
  } finally {
    await db.destroy();
    await database.stop();
  }
}

/** The items' columns came with migration 0018: an older schema is named, not a SQL error. */
async function assertReconcilable(connectionString: string, logger: Logger): Promise<void> {
  const runner = new MigrationRunner({
    connectionString,
    migrations: await loadMigrations(),
    modules: [],
    logger: logger.child({ component: 'migrate' }),
  });
  const pending = (await runner.status()).status.filter((row) => row.state === 'pending');
  if (pending.length > 0) {
    throw new TaskgateError(
      'TG_MIGRATION_PENDING',
      `the database schema is behind this code (${pending.length} migration(s) pending); run taskgate migrate up first`,
    );
  }
}

function notFound(id: string): TaskgateError {
  return new TaskgateError('TG_RECONCILIATION_ITEM_NOT_FOUND', `no reconciliation item ${JSON.stringify(id)}`);
}

/** Who resolves when --by is not given: the operating-system user running the command. */
function operatorName(): string {
  try {
    const name = userInfo().username.trim();
    if (name !== '') return name;
  } catch {
    // No passwd entry for this uid (a container's arbitrary user): fall through.
  }
  throw new TaskgateError('TG_USAGE', 'resolve needs --by NAME: the operating-system user has no name');
}

function itemJson(item: ReconciliationItem) {
  return {
    ...item,
    createdAt: item.createdAt.toISOString(),
    resolvedAt: item.resolvedAt?.toISOString() ?? null,
  };
}

function listTable(items: readonly ReconciliationItem[], state: ReconciliationFilter): string[] {
  if (items.length === 0) return [`no ${state === 'all' ? '' : `${state} `}reconciliation items`];
  const header = ['ID', 'TENANT', 'KIND', 'TOOL', 'TASK', 'CREATED', 'STATE', 'REASON'];
  const rows = items.map((item) => [
    item.id,
    item.tenantId,
    item.kind,
    item.tool,
    item.taskId,
    item.createdAt.toISOString(),
    item.resolvedAt === null ? 'open' : 'resolved',
    printable(item.reason),
  ]);
  return formatTable(header, rows);
}

function itemLines(item: ReconciliationItem): string[] {
  return [
    `item:            ${item.id}`,
    `tenant:          ${item.tenantId}`,
    `task:            ${item.taskId}`,
    `tool:            ${item.tool}`,
    `idempotency key: ${item.idempotencyKey === null ? '-' : printable(item.idempotencyKey)}`,
    `kind:            ${item.kind}`,
    `reason:          ${printable(item.reason)}`,
    `opened:          ${item.createdAt.toISOString()}`,
    item.resolvedAt === null
      ? 'state:           open'
      : `state:           resolved ${item.resolvedAt.toISOString()} by ${printable(item.resolvedBy ?? '')}: ${printable(item.resolution ?? '')}`,
    'known when it opened:',
    ...JSON.stringify(item.details, null, 2)
      .split('\n')
      .map((line) => `  ${line}`),
  ];
}

/** Parses `reconcile …` arguments; every mistake is TG_USAGE naming the option. */
export function parseReconcileArgs(
  values: {
    state?: string | undefined;
    tenant?: string | undefined;
    limit?: string | undefined;
    json?: boolean | undefined;
    note?: string | undefined;
    by?: string | undefined;
  },
  positionals: readonly string[],
): ReconcileArgs {
  const [action, id, ...extra] = positionals;
  if (action !== 'list' && action !== 'show' && action !== 'resolve') {
    throw new TaskgateError('TG_USAGE', 'reconcile takes one of list, show, resolve; run taskgate reconcile --help');
  }
  const only = (option: string, present: unknown, actions: readonly string[]) => {
    if (present !== undefined && !actions.includes(action)) {
      throw new TaskgateError('TG_USAGE', `--${option} only applies to reconcile ${actions.join(' and ')}`);
    }
  };
  only('state', values.state, ['list']);
  only('tenant', values.tenant, ['list']);
  only('limit', values.limit, ['list']);
  only('json', values.json, ['list', 'show']);
  only('note', values.note, ['resolve']);
  only('by', values.by, ['resolve']);
  if (action === 'list') {
    if (id !== undefined) throw new TaskgateError('TG_USAGE', `unexpected argument ${JSON.stringify(id)}`);
    const state = values.state ?? 'open';
    if (state !== 'open' && state !== 'resolved' && state !== 'all') {
      throw new TaskgateError('TG_USAGE', `--state takes open, resolved or all (got ${JSON.stringify(values.state)})`);
    }
    if (values.limit !== undefined && !/^(?:[1-9][0-9]{0,2}|1000)$/.test(values.limit)) {
      throw new TaskgateError(
        'TG_USAGE',
        `--limit takes a whole number from 1 to 1000 (got ${JSON.stringify(values.limit)})`,
      );
    }
    if (values.tenant === '') throw new TaskgateError('TG_USAGE', '--tenant takes a tenant id');
    return {
      action,
      state,
      tenant: values.tenant ?? null,
      limit: values.limit === undefined ? 100 : Number(values.limit),
      json: values.json === true,
    };
  }
  if (id === undefined) throw new TaskgateError('TG_USAGE', `reconcile ${action} takes the item's id`);
  if (extra.length > 0) throw new TaskgateError('TG_USAGE', `unexpected argument ${JSON.stringify(extra[0])}`);
  if (!isReconciliationItemId(id)) {
    throw new TaskgateError(
      'TG_USAGE',
      `an item id is a whole number, as reconcile list shows it (got ${JSON.stringify(id)})`,
    );
  }
  if (action === 'show') return { action, id, json: values.json === true };
  const note = values.note?.trim() ?? '';
  if (note === '') throw new TaskgateError('TG_USAGE', 'reconcile resolve needs --note TEXT: what was found and done');
  if (note.length > 4000) throw new TaskgateError('TG_USAGE', '--note takes at most 4000 characters');
  const by = values.by?.trim();
  if (by === '') throw new TaskgateError('TG_USAGE', '--by takes the name of whoever decided');
  if (by !== undefined && by.length > 200) throw new TaskgateError('TG_USAGE', '--by takes at most 200 characters');
  return { action, id, note, by: by ?? null };
}
