/**
 * What a handshake-revision revision does differently from the others, on top of the methods they
 * share (revisions/handshake/methods.ts). Each revision folder exports one.
 */
export interface HandshakeProfile {
  readonly version: string;
  /** Its own tasks: tools/call's `task` param, tasks/get|result|list|cancel, status notifications. */
  readonly tasks: boolean;
  /** notifications/progress may carry a `message` (from 2025-03-26 on). */
  readonly progressMessages: boolean;
  /** A tools/list entry as the revision defines one: the fields it lacks are removed. */
  readonly toolEntry: (entry: Record<string, unknown>) => Record<string, unknown>;
  /** A CallToolResult as the revision defines one. */
  readonly callResult: (result: Readonly<Record<string, unknown>>) => Readonly<Record<string, unknown>>;
  /** Any other result that may carry content items (prompts/get's messages) as the revision has them. */
  readonly contentResult: (result: Readonly<Record<string, unknown>>) => Readonly<Record<string, unknown>>;
}

type Item = Readonly<Record<string, unknown>>;

/**
 * The result with each content item passed through `map`: a tool result's `content`, a prompt's
 * `messages[].content`. The same object when nothing changed (shared results stay shared).
 */
export function mapContent(result: Readonly<Record<string, unknown>>, map: (item: Item) => Item) {
  let changed = false;
  const each = (item: unknown) => {
    if (typeof item !== 'object' || item === null) return item;
    const mapped = map(item as Item);
    if (mapped !== item) changed = true;
    return mapped;
  };
  const content = Array.isArray(result.content) ? result.content.map(each) : undefined;
  const messages = Array.isArray(result.messages)
    ? result.messages.map((message: unknown) => {
        const inner = (message as { content?: unknown } | null)?.content;
        const mapped = each(inner);
        return mapped === inner ? message : { ...(message as object), content: mapped };
      })
    : undefined;
  if (!changed) return result;
  return { ...result, ...(content ? { content } : {}), ...(messages ? { messages } : {}) };
}

/**
 * A resource link (2025-06-18) for a revision without them: a text item naming it, which every
 * revision's clients can show (a client's schema refuses a content type it does not know, and
 * with it the whole result).
 */
export function linkAsText(item: Item): Item {
  if (item.type !== 'resource_link') return item;
  const name = typeof item.title === 'string' ? item.title : String(item.name ?? item.uri);
  const mimeType = typeof item.mimeType === 'string' ? ` (${item.mimeType})` : '';
  const description = typeof item.description === 'string' ? ` — ${item.description}` : '';
  return { type: 'text', text: `${name}: ${String(item.uri)}${mimeType}${description}` };
}

/** Audio content (2025-03-26) for a revision without it: a text item saying what was left out. */
export function audioAsText(version: string): (item: Item) => Item {
  return (item) => {
    if (item.type !== 'audio') return item;
    const bytes = typeof item.data === 'string' ? Math.floor((item.data.length * 3) / 4) : 0;
    return {
      type: 'text',
      text: `[${String(item.mimeType ?? 'audio')} audio of about ${bytes} bytes, left out: protocol revision ${version} has no audio content]`,
    };
  };
}

/**
 * A CallToolResult without `structuredContent` (before 2025-06-18). A tool that returns structured
 * content should also return it as text (server/tools "Structured Content"); when its content is
 * empty, the JSON goes there, so the client of an older revision still gets the result.
 */
export function withoutStructuredContent(result: Readonly<Record<string, unknown>>) {
  if (!('structuredContent' in result)) return result;
  const { structuredContent, ...rest } = result;
  const content = Array.isArray(rest.content) ? rest.content : [];
  if (content.length > 0 || structuredContent === undefined) return rest;
  return { ...rest, content: [{ type: 'text', text: JSON.stringify(structuredContent) }] };
}

/** Leaves a value as it is (a revision that has every field). */
export function unchanged<T>(value: T): T {
  return value;
}

/** The object without the named fields. */
export function without<T extends Readonly<Record<string, unknown>>>(value: T, fields: readonly string[]): T {
  if (!fields.some((field) => field in value)) return value;
  const copy: Record<string, unknown> = { ...value };
  for (const field of fields) delete copy[field];
  return copy as T;
}
