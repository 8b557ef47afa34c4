/**
 * The `_meta.traceparent` of an MCP request (2026-07-28 basic/index, "OpenTelemetry trace
 * context"), as sent: the task service keeps it only when it is a valid W3C traceparent.
 */
export function traceParentOf(params: Readonly<Record<string, unknown>> | undefined): unknown {
  const meta = params?._meta;
  if (typeof meta !== 'object' || meta === null || Array.isArray(meta)) return undefined;
  return (meta as Record<string, unknown>).traceparent;
}
