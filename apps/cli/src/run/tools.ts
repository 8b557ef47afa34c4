import { fitTable, tableWidth } from '../table-fit.ts';
import { printable } from '../terminal-text.ts';
import type { Terminal } from './tasks.ts';

/**
 * `taskgate tools list [--json]`: GET /v1/tools, the tools the server offers (what its workers
 * publish to the catalog). A table on a terminal, fitted to its width (the description cut
 * first, the name last); JSON on a pipe or with --json.
 */
export async function runToolsList(
  args: { readonly url: string; readonly token?: string; readonly json: boolean },
  out: (line: string) => void,
  terminal: Terminal = {},
): Promise<number> {
  const { RestClient } = await import('@taskgate/client/rest-client');
  const rest = new RestClient({ baseUrl: args.url, ...(args.token ? { token: args.token } : {}) });
  const listed = await rest.listTools();
  if (args.json || terminal.isTTY !== true) {
    out(JSON.stringify(listed));
    return 0;
  }
  if (listed.tools.length === 0) {
    out('no tools offered: no live worker publishes any (start one with taskgate start --role worker --tools …)');
    return 0;
  }
  const rows = listed.tools.map((tool) => [
    tool.name,
    tool.retry,
    tool.idempotencyKey ?? '',
    tool.taskSupport,
    (tool.description.split('\n')[0] as string).trim(),
  ]);
  const shrink = [
    { column: 4, min: 20 },
    { column: 0, min: 16 },
    { column: 4, min: 0 },
    { column: 0, min: 0 },
  ];
  for (const line of fitTable(
    ['NAME', 'RETRY', 'KEY', 'TASK', 'DESCRIPTION'],
    rows.map((row) => row.map(printable)),
    tableWidth(terminal),
    shrink,
  ))
    out(line);
  return 0;
}
