import { ago } from './table-fit.ts';
import { printable } from './terminal-text.ts';

/**
 * A task as `taskgate tasks get` shows it to a person: REST's task (GET /v1/tasks/:id, with its
 * tool, progress and every time) or, from a stdio server, MCP's tasks/get (fewer fields); the
 * fields one has and the other lacks are simply absent.
 */
export interface TaskView {
  readonly id?: string;
  readonly taskId?: string;
  readonly tool?: string;
  readonly status: string;
  readonly statusMessage?: string | null;
  readonly progress?: { readonly value: number; readonly total: number | null; readonly message: string | null } | null;
  readonly attempt?: number;
  readonly createdAt?: string;
  readonly startedAt?: string | null;
  readonly lastUpdatedAt?: string;
  readonly finishedAt?: string | null;
  readonly expiresAt?: string | null;
  readonly cancelRequestedAt?: string | null;
  readonly result?: unknown;
  readonly error?: unknown;
}

const LABEL_WIDTH = 10;

/** One labelled line per known field; a multi-line value continues under its first line. */
export function taskLines(task: TaskView, now: number): string[] {
  const lines: string[] = [];
  const add = (label: string, value: string) => {
    const [first = '', ...more] = value.split('\n');
    lines.push(`${label.padEnd(LABEL_WIDTH)}${printable(first)}`.trimEnd());
    for (const line of more) lines.push(`${' '.repeat(LABEL_WIDTH)}${printable(line)}`.trimEnd());
  };
  const time = (label: string, iso: string | null | undefined) => {
    if (iso) add(label, `${iso} (${ago(iso, now)})`);
  };
  add('task', task.id ?? task.taskId ?? '');
  if (task.tool) add('tool', task.tool);
  add('status', `${task.status}${task.statusMessage ? `  ${task.statusMessage}` : ''}`);
  if (task.progress) add('progress', progressText(task.progress));
  if (task.attempt !== undefined && task.attempt > 1) add('attempt', String(task.attempt));
  time('created', task.createdAt);
  time('started', task.startedAt);
  time('updated', task.lastUpdatedAt);
  time('cancel', task.cancelRequestedAt);
  time('finished', task.finishedAt);
  time('expires', task.expiresAt);
  if (task.result !== undefined && task.result !== null) {
    const errorResult = (task.result as { isError?: unknown }).isError === true;
    add('result', `${errorResult ? '(isError) ' : ''}${resultText(task.result)}`);
  }
  if (task.error !== undefined && task.error !== null) add('error', errorText(task.error));
  return lines;
}

function progressText(progress: NonNullable<TaskView['progress']>): string {
  const { value, total, message } = progress;
  const amount =
    total !== null && total > 0 ? `${value}/${total} (${Math.round((value / total) * 100)}%)` : String(value);
  return message ? `${amount}  ${message}` : amount;
}

/** A CallToolResult's text content, one item a line; otherwise its structured content or itself, as JSON. */
function resultText(result: unknown): string {
  const { content, structuredContent } = result as { content?: unknown; structuredContent?: unknown };
  const texts = Array.isArray(content)
    ? content.filter(
        (item): item is { type: 'text'; text: string } =>
          typeof item === 'object' && item !== null && item.type === 'text' && typeof item.text === 'string',
      )
    : [];
  if (texts.length > 0 && texts.length === (content as unknown[]).length)
    return texts.map((item) => item.text).join('\n');
  return JSON.stringify(structuredContent ?? result);
}

function errorText(error: unknown): string {
  const { code, message } = error as { code?: unknown; message?: unknown };
  if (typeof message === 'string') return `${typeof code === 'number' ? `${code} ` : ''}${message}`;
  return JSON.stringify(error);
}
