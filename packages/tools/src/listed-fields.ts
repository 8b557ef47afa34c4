/**
 * The optional fields a list entry shows for each kind (resources/list, resources/templates/list,
 * prompts/list), as MCP names them: the API lists them, and a content tool publishes the same ones
 * (with each definition's clock), so a remote entry lists as a local one does.
 */
export const LISTED_FIELDS = {
  resource: ['title', 'description', 'mimeType', 'size', 'annotations'],
  template: ['title', 'description', 'mimeType', 'annotations'],
  prompt: ['title', 'description'],
} as const;

/** The fields of `value` among `fields` that are defined (an absent one is left out, not null). */
export function definedFields(value: object, fields: readonly string[]): Record<string, unknown> {
  const picked: Record<string, unknown> = {};
  for (const field of fields) {
    const found = (value as Record<string, unknown>)[field];
    if (found !== undefined) picked[field] = found;
  }
  return picked;
}
