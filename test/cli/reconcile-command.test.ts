import { openReconciliationItem } from '@taskgate/db';
import { defineTool } from '@taskgate/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, runCli } from '../support/cli.ts';
import { useTestDatabase } from '../support/databases.ts';
import { type Platform, type ServedApi, serveApi, startPlatform } from '../support/task-platform.ts';

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
      [['list', '--limit', '0'], '--limit takes a whole number from 1 to 500'],
      [['list', '--limit', '501'], '--limit takes a whole number from 1 to 500'],
      [['list', '--before', '0'], '--before takes an item id'],
      [['show', '1', '--before', '2'], '--before only applies to reconcile list'],
      [['list', '--token', 't'], '--token goes with --url'],
      [['list', '--url', 'ftp://x'], '--url takes an http(s) URL'],
      [['list', '--url', 'http://127.0.0.1:1', '--tenant', 'acme'], '--tenant reads the database'],
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

describe('taskgate reconcile --url: through the server, as the token sees it', () => {
  let api: ServedApi;
  let base: string;
  const mine: string[] = [];
  beforeAll(async () => {
    api = await serveApi(platform, database.url, {
      tokens: new Map([
        ['tok-initech', 'initech'],
        ['tok-other', 'umbrella'],
      ]),
    });
    base = api.mcpUrl.href.replace(/\/mcp$/, '');
    for (const n of [1, 2, 3]) {
      const task = await platform.service.create('initech', { tool: 'wire_transfer', arguments: { n } });
      await openReconciliationItem(platform.db, task.id, `attempt ${n} was lost (initech)`);
      mine.push(task.id);
    }
  });
  afterAll(async () => {
    await api.close();
  });
  const remote = (...args: string[]) =>
    runCli(['reconcile', ...args], cleanEnv({ TASKGATE_URL: base, TASKGATE_TOKEN: 'tok-initech' }));

  it("lists only the token's tenant's items, pages with --before, and shows and resolves one", async () => {
    const first = await remote('list', '--limit', '2');
    expect(first.code).toBe(0);
    // It reads TASKGATE_URL and TASKGATE_TOKEN: no word of them being ignored.
    expect(first.stderr).not.toContain('ignored');
    const lines = first.stdout.trim().split('\n');
    // No tenant column: every row is the token's.
    expect(lines[0]).toMatch(/^ID\s+KIND\s+TOOL\s+TASK\s+CREATED\s+STATE\s+REASON$/);
    expect(lines.slice(1, 3).map((line) => line.split(/\s+/)[3])).toEqual([mine[2], mine[1]]);
    const more = lines.at(-1) ?? '';
    expect(more).toMatch(/^more: taskgate reconcile list --before \d+ --limit 2$/);
    const next = await remote(...more.replace(/^more: taskgate reconcile /, '').split(' '));
    const rest = next.stdout.trim().split('\n');
    expect(rest.slice(1).map((line) => line.split(/\s+/)[3])).toEqual([mine[0]]);
    expect(next.stdout).not.toContain('more:');
    expect(next.stdout).not.toContain('acme');

    const [item] = JSON.parse((await remote('list', '--limit', '1', '--json')).stdout);
    expect(item).toMatchObject({ taskId: mine[2], tenantId: null, resolvedAt: null });
    const shown = await remote('show', item.id);
    expect(shown.stdout).toContain(`task:            ${mine[2]}`);
    expect(shown.stdout).not.toContain('tenant:');
    const resolved = await remote('resolve', item.id, '--note', 'the bank shows no transfer', '--by', 'ana');
    expect(resolved).toMatchObject({ code: 0, stdout: `resolved item ${item.id} (task ${mine[2]}) as "ana"\n` });
    const again = await remote('resolve', item.id, '--note', 'twice', '--by', 'bo');
    expect(again.code).toBe(65);
    expect(again.stderr).toContain('[TG_RECONCILIATION_ITEM_RESOLVED]');
    expect(again.stderr).toContain('by "ana"');
    // The database saw it: the operator's view agrees.
    expect((await cli('show', item.id)).stdout).toMatch(/state: +resolved \S+ by ana: the bank shows no transfer/);
  });

  it("names another tenant's item as not found, and a missing or wrong token as unauthorized", async () => {
    const [acme] = JSON.parse((await cli('list', '--state', 'all', '--tenant', 'acme', '--json')).stdout);
    const other = await remote('show', acme.id);
    expect(other.code).toBe(65);
    expect(other.stderr).toContain('[TG_RECONCILIATION_ITEM_NOT_FOUND]');
    const anonymous = await runCli(['reconcile', 'list', '--url', base], cleanEnv());
    expect(anonymous.stderr).toContain('[TG_UNAUTHORIZED]');
    expect(anonymous.code).not.toBe(0);
    const wrong = await runCli(['reconcile', 'list', '--url', base, '--token', 'nope'], cleanEnv());
    expect(wrong.stderr).toContain('[TG_UNAUTHORIZED]');
  });

  it('says what it reached when the URL is not a Taskgate server', async () => {
    const { createServer } = await import('node:http');
    const html = createServer((_request, response) => {
      response.writeHead(502, { 'content-type': 'text/html' }).end('<html><body>Bad Gateway</body></html>');
    });
    await new Promise<void>((resolve) => html.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = html.address() as { port: number };
      const result = await runCli(['reconcile', 'list', '--url', `http://127.0.0.1:${port}`], cleanEnv());
      expect(result.stderr).toContain('[TG_SERVER_UNREACHABLE]');
      expect(result.stderr).toContain('HTTP 502 and a body that is not JSON ("<html><body>Bad Gateway');
      expect(result.stderr).not.toContain('SyntaxError');
    } finally {
      await new Promise((resolve) => html.close(resolve));
    }
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
