import { openReconciliationItem } from '@taskgate/db';
import { defineTool } from '@taskgate/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, runCli } from '../support/cli.ts';
import { useTestDatabase } from '../support/databases.ts';
import { type Platform, startPlatform } from '../support/task-platform.ts';

// `taskgate reconcile list|show|resolve`: an operator's view of every tenant's items.
const database = useTestDatabase();
const transfer = defineTool({
  name: 'wire_transfer',
  description: 'an unsafe call nobody runs here',
  inputSchema: { type: 'object' },
  retry: 'unsafe',
  async handler() {
    return { content: [] };
  },
});
let platform: Platform;
const taskIds: string[] = [];

beforeAll(async () => {
  platform = await startPlatform(database.url, { tools: [transfer] as never });
  for (const tenant of ['acme', 'globex']) {
    const task = await platform.service.create(tenant, { tool: 'wire_transfer', arguments: { tenant } });
    await openReconciliationItem(platform.db, task.id, `attempt 1 was lost (${tenant})`);
    taskIds.push(task.id);
  }
});
afterAll(async () => {
  await platform.stop();
});

const cli = (...args: string[]) => runCli(['reconcile', ...args], cleanEnv({ DATABASE_URL: database.url }));

describe('taskgate reconcile', () => {
  it("lists every tenant's open items, or one tenant's, as a table or JSON", async () => {
    const table = await cli('list');
    expect(table.code).toBe(0);
    const lines = table.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^ID\s+TENANT\s+KIND\s+TOOL\s+TASK\s+CREATED\s+STATE\s+REASON$/);
    expect(lines.slice(1).map((line) => line.split(/\s+/)[1])).toEqual(['globex', 'acme']);
    expect(table.stdout).toContain('attempt 1 was lost (acme)');

    const json = JSON.parse((await cli('list', '--tenant', 'acme', '--json')).stdout);
    expect(json).toEqual([
      expect.objectContaining({ tenantId: 'acme', taskId: taskIds[0], kind: 'unknown_outcome', resolvedAt: null }),
    ]);
  });

  it('shows one item with what was known, and resolves it once', async () => {
    const [item] = JSON.parse((await cli('list', '--tenant', 'globex', '--json')).stdout);
    const shown = await cli('show', item.id);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(`task:            ${taskIds[1]}`);
    expect(shown.stdout).toContain('state:           open');
    expect(shown.stdout).toContain('"steps": []');

    const resolved = await cli('resolve', item.id, '--note', 'no transfer reached the bank', '--by', 'ana');
    expect(resolved).toMatchObject({ code: 0, stdout: `resolved item ${item.id} (task ${taskIds[1]}) as "ana"\n` });
    const again = await cli('resolve', item.id, '--note', 'second opinion');
    expect(again.code).toBe(65);
    expect(again.stderr).toContain('[TG_RECONCILIATION_ITEM_RESOLVED]');
    expect(again.stderr).toContain('by "ana"');

    expect((await cli('show', item.id)).stdout).toMatch(/state: +resolved \S+ by ana: no transfer reached the bank/);
    expect((await cli('list', '--tenant', 'globex')).stdout).toBe('no open reconciliation items\n');
    const resolvedList = JSON.parse((await cli('list', '--state', 'resolved', '--json')).stdout);
    expect(resolvedList).toEqual([expect.objectContaining({ id: item.id, resolvedBy: 'ana' })]);
  });

  it('shows what a tenant wrote with its control characters escaped, never raw to the terminal', async () => {
    const [item] = JSON.parse((await cli('list', '--tenant', 'acme', '--json')).stdout);
    expect((await cli('resolve', item.id, '--note', 'cleared\u001b[2J\u001b]0;owned\u0007', '--by', 'ana')).code).toBe(
      0,
    );
    const shown = (await cli('show', item.id)).stdout;
    expect(shown).toContain('cleared\\u001b[2J\\u001b]0;owned\\u0007');
    // biome-ignore lint/suspicious/noControlCharactersInRegex: asserting their absence.
    expect(shown).not.toMatch(/[\u001b\u0007]/);
  });

  it('names the mistake in bad arguments, and an id that names no item', async () => {
    const cases: [string[], string][] = [
      [[], 'reconcile takes one of list, show, resolve'],
      [['purge'], 'reconcile takes one of list, show, resolve'],
      [['show'], "reconcile show takes the item's id"],
      [['show', 'abc'], 'an item id is a whole number'],
      [['show', '1', '2'], 'unexpected argument "2"'],
      [['list', '--state', 'closed'], '--state takes open, resolved or all'],
      [['list', '--limit', '0'], '--limit takes a whole number from 1 to 1000'],
      [['list', '--note', 'x'], '--note only applies to reconcile resolve'],
      [['resolve', '1'], 'reconcile resolve needs --note TEXT'],
      [['resolve', '1', '--note', '   '], 'reconcile resolve needs --note TEXT'],
      [['resolve', '1', '--note', 'x', '--by', ''], '--by takes the name of whoever decided'],
      [['list', '--colour'], 'unknown option --colour for reconcile'],
    ];
    for (const [args, message] of cases) {
      const result = await cli(...args);
      expect({ args, code: result.code }).toEqual({ args, code: 64 });
      expect(result.stderr).toContain(message);
      expect(result.stderr).toContain('[TG_USAGE]');
    }
    const missing = await cli('show', '999999');
    expect(missing.code).toBe(65);
    expect(missing.stderr).toContain('[TG_RECONCILIATION_ITEM_NOT_FOUND]');
    expect((await runCli(['reconcile', '--help'], cleanEnv())).stdout).toContain('reconcile resolve ID --note TEXT');
  });
});

describe('taskgate reconcile on a database that is not migrated', () => {
  const empty = useTestDatabase({ empty: true });

  it('says to migrate instead of failing on a missing column', async () => {
    const result = await runCli(['reconcile', 'list'], cleanEnv({ DATABASE_URL: empty.url }));
    expect(result.stderr).toContain('[TG_MIGRATION_PENDING]');
    expect(result.stderr).toContain('run taskgate migrate up first');
  });
});
