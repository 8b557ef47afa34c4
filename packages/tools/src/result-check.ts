/**
 * What is wrong with a handler's result, or null: it must be an MCP CallToolResult — `content` an
 * array of blocks with a string `type`, `structuredContent` an object if present, `isError` a
 * boolean if present — or clients refuse it (the SDK clients throw on a malformed result) after
 * the task already said `completed`.
 */
export function toolResultProblem(result: unknown): string | null {
  if (typeof result !== 'object' || result === null || Array.isArray(result)) {
    return `it returned ${result === undefined ? 'nothing' : JSON.stringify(result)?.slice(0, 60)}, not a { content: [...] } result`;
  }
  const { content, structuredContent, isError } = result as Record<string, unknown>;
  if (!Array.isArray(content)) return 'its result has no content array';
  const bad = content.findIndex(
    (block) => typeof block !== 'object' || block === null || typeof (block as { type?: unknown }).type !== 'string',
  );
  if (bad >= 0) return `content[${bad}] of its result is not a content block with a type`;
  if (
    structuredContent !== undefined &&
    (typeof structuredContent !== 'object' || structuredContent === null || Array.isArray(structuredContent))
  ) {
    return 'structuredContent of its result is not an object';
  }
  if (isError !== undefined && typeof isError !== 'boolean') return 'isError of its result is not a boolean';
  return null;
}
