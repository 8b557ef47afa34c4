import type { RestTask, TaskState } from '@taskgate/client';
import { isErrorCode, TaskgateError } from '@taskgate/errors';
import { connectTarget, type ServerTarget } from '../server-target.ts';
import { ago, fitTable, tableWidth } from '../table-fit.ts';
import { type TaskView, taskLines } from '../task-view.ts';
import { printable } from '../terminal-text.ts';

/** Where the output goes: a terminal (its width) gets text for a person, a pipe gets JSON. */
export interface Terminal {
  readonly isTTY?: boolean;
  readonly columns?: number;
}

export interface TasksArgs {
  readonly action: 'get' | 'cancel' | 'watch';
  readonly taskId: string;
  readonly target: ServerTarget;
  readonly json: boolean;
}

/**
 * `taskgate tasks get|cancel|watch ID` over MCP (the Tasks extension). `cancel` prints the
 * acknowledgement at once ("cancel requested") and then the status the task ends in; `watch`
 * prints each change of status, and each rise of its progress, until the task ends. With
 * --json, one JSON object per line (the task, whenever its status or progress changed).
 */
export async function runTasks(
  args: TasksArgs,
  out: (line: string) => void,
  terminal: Terminal = {},
  now: () => number = Date.now,
): Promise<number> {
  const readable = !args.json && terminal.isTTY === true;
  if (args.action === 'get' && readable && args.target.kind === 'http') {
    // REST's task has what MCP's tasks/get leaves out: the tool, the progress, every time.
    const { RestClient } = await import('@taskgate/client/rest-client');
    const { url, token } = args.target;
    const task = await new RestClient({ baseUrl: url, ...(token ? { token } : {}) }).getTask(args.taskId);
    for (const line of taskLines(task as TaskView, now())) out(line);
    return 0;
  }
  const { client, explain } = await connectTarget(args.target);
  const show = (task: TaskState) =>
    out(
      args.json
        ? JSON.stringify(task)
        : `${task.taskId}  ${task.status}${task.statusMessage ? `  ${task.statusMessage}` : ''}`,
    );
  try {
    if (args.action === 'get') {
      const task = await client.getTask(args.taskId);
      // On a pipe the task as JSON, for scripts (with or without --json); on a terminal, labelled lines.
      if (readable) for (const line of taskLines(task as TaskView, now())) out(line);
      else out(JSON.stringify(task));
      return 0;
    }
    if (args.action === 'cancel') {
      const { terminal } = await client.cancelTask(args.taskId);
      out(
        args.json ? JSON.stringify({ taskId: args.taskId, cancel: 'requested' }) : `${args.taskId}  cancel requested`,
      );
      const ended = await terminal;
      show(ended);
      return ended.status === 'cancelled' ? 0 : 1;
    }
    let last = '';
    const ended = await client.watchTask(args.taskId, {
      onUpdate: (task) => {
        // --json: the task whenever its status or its progress (in its _meta) changed.
        const key = JSON.stringify([task.status, task.statusMessage ?? '', args.json ? (task._meta ?? null) : null]);
        if (key !== last) show(task);
        last = key;
      },
      // Each rise of the progress the task holds, on a line of its own.
      onProgress: (update) => {
        if (args.json) return;
        const done = update.total === undefined ? `${update.progress}` : `${update.progress}/${update.total}`;
        out(`${args.taskId}  progress ${done}${update.message ? `  ${printable(update.message)}` : ''}`);
      },
    });
    return ended.status === 'completed' ? 0 : 1;
  } catch (error) {
    throw asCliError(explain(error));
  } finally {
    await client.close().catch(() => {});
  }
}

/**
 * A JSON-RPC error the server answered (ours, or the SDK's ProtocolError carrying it) as the coded
 * error it names in data.code — one line and its exit status instead of an internal error.
 */
export function asCliError(error: unknown): unknown {
  if (error === null || typeof error !== 'object' || typeof (error as { code?: unknown }).code !== 'number') {
    return error;
  }
  const code = (error as { data?: { code?: unknown } }).data?.code;
  const message = ((error as Error).message ?? 'the server refused the request').replace(/^MCP error -?\d+: /, '');
  return new TaskgateError(typeof code === 'string' && isErrorCode(code) ? code : 'TG_REQUEST_INVALID', message);
}

/** `taskgate tasks list [--status S] [--limit N] [--cursor C] [--json]`: /v1/tasks, newest first, a page. */
export async function runTasksList(
  args: {
    readonly url: string;
    readonly token?: string;
    readonly status?: string;
    readonly limit?: number;
    readonly cursor?: string;
    readonly json: boolean;
  },
  out: (line: string) => void,
  terminal: Terminal = {},
  now: () => number = Date.now,
): Promise<number> {
  const { RestClient } = await import('@taskgate/client/rest-client');
  const rest = new RestClient({ baseUrl: args.url, ...(args.token ? { token: args.token } : {}) });
  const page = await rest.listTasks({
    ...(args.status ? { status: args.status as never } : {}),
    ...(args.limit !== undefined ? { limit: args.limit } : {}),
    ...(args.cursor !== undefined ? { cursor: args.cursor } : {}),
  });
  if (args.json) {
    out(JSON.stringify(page));
    return 0;
  }
  // On a terminal the table fits its width: ids and statuses whole (a person copies an id into
  // the next command), the message and then the tool cut short, the creation time as an age.
  const width = tableWidth(terminal);
  const created = (iso: string) => (Number.isFinite(width) ? ago(iso, now()) : iso);
  const rows = page.tasks.map((task) => [
    task.id,
    task.tool,
    task.status,
    created(String(task.createdAt ?? '')),
    (messageOf(task).split('\n')[0] as string).trim(),
  ]);
  const shrink = [
    { column: 4, min: 16 },
    { column: 1, min: 12 },
    { column: 4, min: 0 },
    { column: 1, min: 0 },
  ];
  for (const line of fitTable(
    ['ID', 'TOOL', 'STATUS', 'CREATED', 'MESSAGE'],
    rows.map((row) => row.map(printable)),
    width,
    shrink,
  ))
    out(line);
  if (page.nextCursor) out(`more: taskgate tasks list --cursor ${page.nextCursor}`);
  return 0;
}

/** A task's status message, else (a working task) its progress: what the MESSAGE column shows. */
function messageOf(task: RestTask): string {
  if (task.statusMessage) return task.statusMessage;
  const progress = task.progress as { value: number; total: number | null; message: string | null } | null;
  if (!progress || TERMINAL.has(task.status)) return '';
  const share = progress.total ? `${Math.round((progress.value / progress.total) * 100)}%` : String(progress.value);
  return progress.message ? `${share} ${progress.message}` : share;
}

const TERMINAL: ReadonlySet<string> = new Set(['completed', 'failed', 'cancelled']);

/** `taskgate keys get KEY [--json]`: did the call that used this idempotency key commit, and with what? */
export async function runKeysGet(
  args: { readonly url: string; readonly token?: string; readonly key: string; readonly json: boolean },
  out: (line: string) => void,
): Promise<number> {
  const { RestClient } = await import('@taskgate/client/rest-client');
  const rest = new RestClient({ baseUrl: args.url, ...(args.token ? { token: args.token } : {}) });
  const record = await rest.getIdempotencyKey(args.key);
  if (args.json) {
    out(JSON.stringify(record));
    return 0;
  }
  out(`key        ${record.key}`);
  out(`operation  ${record.operation}`);
  out(`state      ${record.state}${record.completedAt ? ` (${record.completedAt})` : ''}`);
  if (record.taskId) out(`task       ${record.taskId}`);
  out(`result     ${JSON.stringify(record.result)}`);
  out(`expires    ${record.expiresAt}`);
  return 0;
}
