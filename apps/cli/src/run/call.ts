import type { TaskgateClient, TaskState } from '@taskgate/client';
import { isTaskgateError, TaskgateError } from '@taskgate/errors';
import { ProgressLine } from '../progress-line.ts';
import { connectTarget, type ServerTarget } from '../server-target.ts';

export interface CallArgs {
  readonly tool: string;
  /** `--arg key=value`, in order (a later one wins). */
  readonly pairs: readonly string[];
  /** `--json '{…}'`: the whole arguments object. */
  readonly json?: string;
  readonly target: ServerTarget;
}

export interface CallIo {
  readonly stdout: (line: string) => void;
  readonly stderr: (line: string) => void;
  /** Whether stderr is a terminal: a live progress line then, plain lines otherwise. */
  readonly terminal: boolean;
  /** Writes to the terminal without a newline (the progress line redraws itself). */
  readonly draw: (text: string) => void;
  /** Whether stdout is a terminal: the result's text then, its JSON otherwise. */
  readonly stdoutTerminal: boolean;
  /** The process's SIGINT, as a listener to add and remove. */
  readonly onInterrupt: (listener: () => void) => () => void;
}

/** Exit status of a call Ctrl-C stopped (128 + SIGINT), as shells report one. */
const INTERRUPTED = 130;

/**
 * `taskgate call TOOL`: one tools/call through @taskgate/client, as a person at a terminal wants
 * it. Progress shows on one redrawn line (stderr); a call that becomes a task shows its status.
 * The first Ctrl-C sends the cancel the transport wants (a closed stream, or tasks/cancel once
 * the call is a task) and says "cancel requested" until the task's terminal status arrives; a
 * second Ctrl-C leaves without waiting for it — the first one's cancel still stands (close()
 * delivers it), so the line says the task stops at its next checkpoint unless it finishes
 * first. The result goes to stdout: its
 * text on a terminal, the whole result as JSON otherwise. A tool error (isError) exits 1.
 */
export async function runCall(args: CallArgs, io: CallIo): Promise<number> {
  // A mistyped --json is named before anything is dialled, server or not.
  const whole = jsonArguments(args.json);
  const { client, explain } = await connectTarget(args.target);
  const progress = new ProgressLine(io.terminal ? io.draw : (text) => io.stderr(text.trimEnd()), {
    lines: !io.terminal,
  });
  try {
    const argumentsObject = await callArguments(client, args, whole);
    const controller = new AbortController();
    let task: TaskState | null = null;
    let shownStatus = '';
    let interrupts = 0;
    let leave!: (code: number) => void;
    const left = new Promise<number>((resolve) => {
      leave = resolve;
    });
    const stopListening = io.onInterrupt(() => {
      interrupts += 1;
      if (interrupts === 1) {
        progress.say(
          `cancel requested${task ? ` for task ${task.taskId}` : ''} — Ctrl-C again to leave without waiting`,
        );
        if (task === null) {
          controller.abort(new Error('Ctrl-C'));
          return;
        }
        const taskId = task.taskId;
        void client.cancelTask(taskId).then(
          ({ terminal }) =>
            terminal.then((ended) => {
              progress.done(`task ${taskId} ${ended.status}`);
              leave(ended.status === 'cancelled' ? INTERRUPTED : ended.status === 'completed' ? 0 : 1);
            }),
          (error: Error) => {
            progress.done(`cancel of task ${taskId} failed: ${error.message}`);
            leave(1);
          },
        );
        return;
      }
      progress.done(
        task
          ? `left without waiting: the cancel of task ${task.taskId} stands, and it stops at its next checkpoint unless it finishes first (taskgate tasks get ${task.taskId})`
          : 'left without waiting: the server was told to stop',
      );
      leave(INTERRUPTED);
    });
    try {
      const call = client.callTool(args.tool, argumentsObject, {
        signal: controller.signal,
        // The bar follows the call for its whole life: a task's progress comes from its polls.
        // Once Ctrl-C was pressed, the line says what the cancel is doing instead.
        onProgress: (update) => {
          if (interrupts === 0) progress.progress(update.progress, update.total, update.message);
        },
        onTask: (state) => {
          task = state;
          const line = `task ${state.taskId} ${state.status}${state.statusMessage ? `: ${state.statusMessage}` : ''}`;
          // Said when it changes, not at every poll: in between, the bar shows the progress.
          if (interrupts === 0 && line !== shownStatus) progress.status(line);
          shownStatus = line;
        },
      });
      const outcome = await Promise.race([
        call.then(
          (result) => ({ kind: 'result' as const, result }),
          (error: unknown) => ({ kind: 'error' as const, error }),
        ),
        left.then((code) => ({ kind: 'left' as const, code })),
      ]);
      if (outcome.kind === 'left') return outcome.code;
      if (outcome.kind === 'error') {
        // A cancelled task's call ends with the task: wait for the terminal line the cancel prints.
        if (interrupts > 0 && task !== null) return await left;
        if (interrupts > 0 && isTaskgateError(outcome.error) && outcome.error.code === 'TG_CALL_CANCELLED') {
          progress.done('cancelled: the server was told to stop');
          return INTERRUPTED;
        }
        progress.clear();
        throw outcome.error;
      }
      progress.clear();
      const { result } = outcome;
      if (io.stdoutTerminal) {
        for (const block of result.content ?? []) {
          io.stdout(block.type === 'text' ? block.text : JSON.stringify(block));
        }
      } else {
        io.stdout(JSON.stringify(result));
      }
      return result.isError === true ? 1 : 0;
    } finally {
      stopListening();
    }
  } catch (error) {
    throw explain(error);
  } finally {
    await client.close().catch(() => {});
  }
}

/**
 * The call's arguments: `--json` whole, then each `--arg key=value` on top. A value is taken as it
 * is typed where the tool's schema says the property is a string, and read as JSON otherwise
 * (`--arg seconds=30` is the number 30, `--arg dry=true` the boolean); what does not read is an
 * error naming the property, never a guess. The server checks the result against the schema.
 */
async function callArguments(
  client: TaskgateClient,
  args: CallArgs,
  base: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  if (args.pairs.length === 0) return base;
  const tools = await client.listTools();
  const tool = tools.find((candidate) => candidate.name === args.tool);
  const properties = ((tool?.inputSchema as { properties?: Record<string, { type?: unknown }> } | undefined)
    ?.properties ?? {}) as Record<string, { type?: unknown }>;
  for (const pair of args.pairs) {
    const equals = pair.indexOf('=');
    if (equals <= 0) throw new TaskgateError('TG_USAGE', `--arg takes key=value (got ${JSON.stringify(pair)})`);
    const key = pair.slice(0, equals);
    const text = pair.slice(equals + 1);
    if (properties[key]?.type === 'string') {
      setOwn(base, key, text);
      continue;
    }
    try {
      setOwn(base, key, JSON.parse(text));
    } catch {
      const type = typeof properties[key]?.type === 'string' ? ` (its schema says ${properties[key]?.type})` : '';
      throw new TaskgateError(
        'TG_USAGE',
        `--arg ${key}=${text}: ${key} is not a string${type}, and ${JSON.stringify(text)} does not read as JSON; quote a string as --arg '${key}="${text}"'`,
      );
    }
  }
  return base;
}

/** `--json '{…}'`: an object, or a usage error saying what it takes. */
function jsonArguments(json: string | undefined): Record<string, unknown> {
  if (json === undefined) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch (error) {
    throw new TaskgateError('TG_USAGE', `--json is not JSON: ${(error as Error).message}`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    const got = parsed === null ? 'null' : Array.isArray(parsed) ? 'an array' : `a ${typeof parsed}`;
    throw new TaskgateError(
      'TG_USAGE',
      `--json takes a JSON object of the arguments, like '{"seconds": 2}' (got ${got})`,
    );
  }
  return parsed as Record<string, unknown>;
}

/**
 * An own property even for `__proto__`: plain assignment would set the object's prototype
 * instead, and the argument would vanish from the call without a word.
 */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}
