import type { TaskState } from '@taskgate/client';
import { isErrorCode, TaskgateError } from '@taskgate/errors';

export interface TasksArgs {
  readonly action: 'get' | 'cancel' | 'watch';
  readonly taskId: string;
  readonly url: string;
  readonly token?: string;
  readonly json: boolean;
}

/**
 * `taskgate tasks get|cancel|watch ID` over MCP (the Tasks extension). `cancel` prints the
 * acknowledgement at once ("cancel requested") and then the status the task ends in; `watch`
 * prints each change until the task ends. With --json, one JSON object per line.
 */
export async function runTasks(args: TasksArgs, out: (line: string) => void): Promise<number> {
  const { TaskgateClient } = await import('@taskgate/client');
  const client = await TaskgateClient.connectHttp({ url: args.url, ...(args.token ? { token: args.token } : {}) });
  const show = (task: TaskState) =>
    out(
      args.json
        ? JSON.stringify(task)
        : `${task.taskId}  ${task.status}${task.statusMessage ? `  ${task.statusMessage}` : ''}`,
    );
  try {
    if (args.action === 'get') {
      show(await client.getTask(args.taskId));
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
        const key = `${task.status}|${task.statusMessage ?? ''}`;
        if (key !== last) show(task);
        last = key;
      },
    });
    return ended.status === 'completed' ? 0 : 1;
  } catch (error) {
    throw asCliError(error);
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
