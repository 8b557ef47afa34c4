/**
 * Results a server hands out again and again unchanged (tools/list of one version of the offer):
 * their JSON is made once and reused, as text (stdio writes lines) and as UTF-8 bytes (HTTP writes
 * those as they are). Serialising 200 tools' schemas (~104 KB) per request would be most of what
 * answering tools/list costs; encoding the text to UTF-8 again for every response cost 0.1-0.2 ms
 * of the server's time and ten times the young-generation collections (bench/tools-list.ts).
 * Entries go with their results.
 */
const serialized = new WeakMap<object, { readonly text: string; readonly bytes: Buffer }>();
const RESPONSE_END = Buffer.from('}');

/** Marks `result` as shared and unchanging: sent by its cached JSON from now on (resultJson, sharedResponse). */
export function shareResult<T extends object>(result: T): T {
  const text = JSON.stringify(result);
  serialized.set(result, { text, bytes: Buffer.from(text) });
  return result;
}

/** The JSON-RPC response of `result` as text, reusing the JSON of a shared result. */
export function resultJson(id: unknown, result: Readonly<Record<string, unknown>>): string {
  const json = serialized.get(result)?.text ?? JSON.stringify(result);
  return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${json}}`;
}

/**
 * The JSON-RPC response of a shared result as the byte pieces to write in order — the id's, the
 * cached result's, the end — or null when `result` is not shared.
 */
export function sharedResponse(id: unknown, result: Readonly<Record<string, unknown>>): readonly Buffer[] | null {
  const shared = serialized.get(result);
  if (!shared) return null;
  return [Buffer.from(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":`), shared.bytes, RESPONSE_END];
}

/** Whether `result` was marked with shareResult (it goes out by its cached JSON). */
export function isShared(result: object): boolean {
  return serialized.has(result);
}
