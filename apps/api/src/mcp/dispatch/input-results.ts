/**
 * Whether a client's answer to an input request has the shape of that request's result (the MCP
 * schema's ElicitResult, CreateMessageResult, ListRootsResult), or what is wrong with it. A handler
 * gets only answers of the right shape; what is inside (an elicitation's content against its
 * requestedSchema) is the handler's to check.
 */
export function inputResultProblem(method: string, result: unknown): string | null {
  if (typeof result !== 'object' || result === null || Array.isArray(result)) return 'is not an object';
  const fields = result as Record<string, unknown>;
  if (method === 'elicitation/create') {
    if (!['accept', 'decline', 'cancel'].includes(fields.action as string)) {
      return 'has no action of "accept", "decline" or "cancel"';
    }
    const content = fields.content;
    if (content !== undefined && (typeof content !== 'object' || content === null || Array.isArray(content))) {
      return 'has a content that is not an object';
    }
    return null;
  }
  if (method === 'sampling/createMessage') {
    if (fields.role !== 'user' && fields.role !== 'assistant') return 'has no role of "user" or "assistant"';
    if (typeof fields.model !== 'string') return 'has no model string';
    if (typeof fields.content !== 'object' || fields.content === null) return 'has no content';
    return null;
  }
  if (method === 'roots/list') {
    const roots = fields.roots;
    if (!Array.isArray(roots)) return 'has no roots array';
    if (roots.some((root) => typeof (root as { uri?: unknown } | null)?.uri !== 'string')) {
      return 'has a root without a uri string';
    }
    return null;
  }
  return null;
}
