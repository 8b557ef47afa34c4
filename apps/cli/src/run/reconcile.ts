import { userInfo } from 'node:os';
import type { RestReconciliationItem } from '@taskgate/client';
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
      readonly before: string | null;
      readonly json: boolean;
    }
  | { readonly action: 'show'; readonly id: string; readonly json: boolean }
  | { readonly action: 'resolve'; readonly id: string; readonly note: string; readonly by: string | null };

/** Where the items are read: a server's /v1 (its token's tenant) or the database (every tenant). */
export type ReconcileTarget = { readonly url: string; readonly token?: string } | null;

/** An item as printed: the REST answer's fields, and the tenant where the database says it. */
type ShownItem = RestReconciliationItem & { readonly tenantId: string | null };

/** The three operations, on whichever side holds the items. */
interface ItemSource {
  list(args: Extract<ReconcileArgs, { action: 'list' }>): Promise<{ items: ShownItem[]; next: string | null }>;
  show(id: string): Promise<ShownItem>;
  resolve(id: string, note: string, by: string): Promise<ShownItem>;
  close(): Promise<void>;
}

/**
 * `taskgate reconcile list|show|resolve`. With --url (or TASKGATE_URL) through the server's
 * /v1/reconciliation-items, as the token's tenant (its taskgate:admin scope); without, an
 * operator's view of every tenant's items straight from DATABASE_URL or the embedded database.
 */
export async function runReconcile(
  args: ReconcileArgs,
  target: ReconcileTarget,
  config: Config,
  logger: Logger,
  out: Output,
): Promise<number> {
  const source = target === null ? await databaseSource(config, logger) : await restSource(target);
  try {
    switch (args.action) {
      case 'list': {
        const { items, next } = await source.list(args);
        if (args.json) out.write(JSON.stringify(items, null, 2));
        else {
          for (const line of listTable(items, args.state, target === null)) out.write(line);
          if (next !== null) out.write(`more: taskgate reconcile list --before ${next}${pageOptions(args)}`);
        }
        return 0;
      }
      case 'show': {
        const item = await source.show(args.id);
        if (args.json) out.write(JSON.stringify(item, null, 2));
        else for (const line of itemLines(item)) out.write(line);
        return 0;
      }
      case 'resolve': {
        const by = args.by ?? operatorName();
        const item = await source.resolve(args.id, args.note, by);
        out.write(`resolved item ${args.id} (task ${item.taskId}) as ${JSON.stringify(by)}`);
        return 0;
      }
    }
  } finally {
    await source.close();
  }
}

/** The options that select the list, repeated in the next page's command line. */
function pageOptions(args: Extract<ReconcileArgs, { action: 'list' }>): string {
  return [
    args.state === 'open' ? '' : ` --state ${args.state}`,
    args.tenant === null ? '' : ` --tenant ${args.tenant}`,
    args.limit === DEFAULT_LIMIT ? '' : ` --limit ${args.limit}`,
  ].join('');
}

const DEFAULT_LIMIT = 100;

async function databaseSource(config: Config, logger: Logger): Promise<ItemSource> {
  const database = await openDatabase(config, logger);
  const pool = createPool(database.connectionString, { applicationName: 'taskgate-reconcile', max: 2 });
  const db = createKysely(pool);
  const close = async () => {
    await db.destroy();
    await database.stop();
  };
  try {
    await assertReconcilable(database.connectionString, logger);
  } catch (error) {
    await close();
    throw error;
  }
  return {
    async list(args) {
      const items = await listReconciliationItems(db, {
        tenantId: args.tenant,
        filter: args.state,
        limit: args.limit,
        ...(args.before === null ? {} : { before: args.before }),
      });
      return { items: items.map(shownRow), next: items.length === args.limit ? (items.at(-1)?.id ?? null) : null };
    },
    async show(id) {
      const item = await findReconciliationItem(db, null, id);
      if (item === null) throw notFound(id);
      return shownRow(item);
    },
    async resolve(id, note, by) {
      const outcome = await resolveReconciliationItem(db, { tenantId: null, id, resolution: note, resolvedBy: by });
      if (outcome.kind === 'not-found') throw notFound(id);
      if (outcome.kind === 'already-resolved') {
        const { item } = outcome;
        throw new TaskgateError(
          'TG_RECONCILIATION_ITEM_RESOLVED',
          `item ${id} was resolved already, by ${JSON.stringify(item.resolvedBy)} at ${item.resolvedAt?.toISOString()}: ${item.resolution}`,
        );
      }
      return shownRow(outcome.item);
    },
    close,
  };
}

async function restSource(target: NonNullable<ReconcileTarget>): Promise<ItemSource> {
  const { RestClient } = await import('@taskgate/client');
  const rest = new RestClient({ baseUrl: target.url, ...(target.token ? { token: target.token } : {}) });
  const shown = (item: RestReconciliationItem): ShownItem => ({ ...item, tenantId: null });
  return {
    async list(args) {
      const page = await rest.listReconciliationItems({
        state: args.state,
        limit: args.limit,
        ...(args.before === null ? {} : { before: args.before }),
      });
      return { items: page.items.map(shown), next: page.next };
    },
    show: async (id) => shown(await rest.getReconciliationItem(id)),
    resolve: async (id, note, by) =>
      shown(await rest.resolveReconciliationItem(id, { resolution: note, resolvedBy: by })),
    close: async () => {},
  };
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

function shownRow(item: ReconciliationItem): ShownItem {
  return {
    ...item,
    createdAt: item.createdAt.toISOString(),
    resolvedAt: item.resolvedAt?.toISOString() ?? null,
  };
}

/** A tenant column only where the items are every tenant's (the database). */
function listTable(items: readonly ShownItem[], state: ReconciliationFilter, tenants: boolean): string[] {
  if (items.length === 0) return [`no ${state === 'all' ? '' : `${state} `}reconciliation items`];
  const header = ['ID', ...(tenants ? ['TENANT'] : []), 'KIND', 'TOOL', 'TASK', 'CREATED', 'STATE', 'REASON'];
  const rows = items.map((item) => [
    item.id,
    ...(tenants ? [printable(item.tenantId ?? '')] : []),
    item.kind,
    printable(item.tool),
    item.taskId,
    item.createdAt,
    item.resolvedAt === null ? 'open' : 'resolved',
    printable(item.reason),
  ]);
  return formatTable(header, rows);
}

function itemLines(item: ShownItem): string[] {
  return [
    `item:            ${item.id}`,
    ...(item.tenantId === null ? [] : [`tenant:          ${printable(item.tenantId)}`]),
    `task:            ${item.taskId}`,
    `tool:            ${printable(item.tool)}`,
    `idempotency key: ${item.idempotencyKey === null ? '-' : printable(item.idempotencyKey)}`,
    `kind:            ${item.kind}`,
    `reason:          ${printable(item.reason)}`,
    `opened:          ${item.createdAt}`,
    item.resolvedAt === null
      ? 'state:           open'
      : `state:           resolved ${item.resolvedAt} by ${printable(item.resolvedBy ?? '')}: ${printable(item.resolution ?? '')}`,
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
    before?: string | undefined;
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
  only('before', values.before, ['list']);
  only('json', values.json, ['list', 'show']);
  only('note', values.note, ['resolve']);
  only('by', values.by, ['resolve']);
  if (action === 'list') {
    if (id !== undefined) throw new TaskgateError('TG_USAGE', `unexpected argument ${JSON.stringify(id)}`);
    const state = values.state ?? 'open';
    if (state !== 'open' && state !== 'resolved' && state !== 'all') {
      throw new TaskgateError('TG_USAGE', `--state takes open, resolved or all (got ${JSON.stringify(values.state)})`);
    }
    // A page, as GET /v1/reconciliation-items serves one: the same bound either way.
    if (values.limit !== undefined && !/^(?:[1-9][0-9]?|[1-4][0-9]{2}|500)$/.test(values.limit)) {
      throw new TaskgateError(
        'TG_USAGE',
        `--limit takes a whole number from 1 to 500 (got ${JSON.stringify(values.limit)})`,
      );
    }
    if (values.before !== undefined && !isReconciliationItemId(values.before)) {
      throw new TaskgateError(
        'TG_USAGE',
        `--before takes an item id, as the list's last line names it (got ${JSON.stringify(values.before)})`,
      );
    }
    if (values.tenant === '') throw new TaskgateError('TG_USAGE', '--tenant takes a tenant id');
    return {
      action,
      state,
      tenant: values.tenant ?? null,
      limit: values.limit === undefined ? DEFAULT_LIMIT : Number(values.limit),
      before: values.before ?? null,
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
