/**
 * What a request needs of the client, against what the client declared for it (basic/index "A
 * server MUST NOT rely on capabilities the client has not declared"). Capabilities are nested
 * objects whose presence means support (`{ elicitation: { form: {} } }`, `{ extensions: {
 * "io.modelcontextprotocol/tasks": {} } }`), so "declared" means every key path of the requirement
 * is present in the declaration as an object or a `true`.
 */
export type Capabilities = Readonly<Record<string, unknown>>;

/**
 * The part of `required` that `declared` lacks, shaped like `required` (what -32021 reports in
 * `data.requiredCapabilities`), or null when the declaration covers it.
 */
export function missingCapabilities(required: Capabilities, declared: Capabilities | undefined): Capabilities | null {
  const missing: Record<string, unknown> = {};
  for (const [name, need] of Object.entries(required)) {
    const have = declared?.[name];
    if (!isPresent(have)) {
      missing[name] = need;
      continue;
    }
    if (isObject(need) && isObject(have)) {
      const deeper = missingCapabilities(need, have);
      if (deeper) missing[name] = deeper;
    }
  }
  return Object.keys(missing).length === 0 ? null : missing;
}

function isPresent(value: unknown): boolean {
  return isObject(value) || value === true;
}

function isObject(value: unknown): value is Capabilities {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
