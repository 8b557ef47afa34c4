/**
 * What a token's scopes allow, by group of methods. An OAuth token carries the scopes its user
 * consented to; a static token (TASKGATE_TOKENS) is a service's and may do everything.
 *
 * - tools: discover and call tools, resources, prompts, completion, logging — MCP itself, and a
 *   tool module's own /v1 routes;
 * - tasks: read, watch and cancel tasks, and look a call's idempotency key up (MCP `tasks/*`,
 *   /v1/tasks other than POST, /v1/idempotency-keys, and /v1/tools/stats, which counts tasks);
 * - admin: reconciliation items (/v1/reconciliation-items), saying a URL elicitation is
 *   complete (/v1/elicitations), which speaks for the server to its clients, and the fleet's
 *   instances (/v1/instances, the console's workers page), and the outbox with its redeliver
 *   (/v1/outbox, the console's outbox page);
 * - metrics: GET /metrics.
 */
export const SCOPE_GROUPS = ['tools', 'tasks', 'admin', 'metrics'] as const;
export type ScopeGroup = (typeof SCOPE_GROUPS)[number];

export const SCOPE_PREFIX = 'taskgate:';

export function scopeName(group: ScopeGroup): string {
  return `${SCOPE_PREFIX}${group}`;
}

/** Every scope this server knows, for its protected-resource metadata. */
export const SCOPES_SUPPORTED: readonly string[] = SCOPE_GROUPS.map(scopeName);

/**
 * The scopes a client is asked for on its first 401 from /mcp: enough to call a tool and follow the
 * task it may answer with (the spec's "Scope Selection Strategy": the challenge is authoritative).
 */
export const MCP_SCOPES: readonly ScopeGroup[] = ['tools', 'tasks'];

export function mcpScopeOf(method: string): ScopeGroup {
  return method.startsWith('tasks/') ? 'tasks' : 'tools';
}

/**
 * By the route's URL pattern (`/v1/tasks/:id`), not the request's path. Creating a task is calling
 * a tool (POST /v1/tasks), so it needs the tools scope; reading, watching and cancelling tasks the
 * tasks scope.
 */
export function restScopeOf(method: string, routeUrl: string | undefined): ScopeGroup {
  if (routeUrl === undefined) return 'tools';
  if (routeUrl === '/metrics') return 'metrics';
  if (
    routeUrl.startsWith('/v1/reconciliation-items') ||
    routeUrl.startsWith('/v1/elicitations') ||
    routeUrl === '/v1/instances' ||
    routeUrl === '/v1/tenants' ||
    routeUrl.startsWith('/v1/outbox')
  )
    return 'admin';
  if (routeUrl === '/v1/tasks' && method === 'POST') return 'tools';
  // The tools overview counts the tenant's tasks: reading tasks, not calling tools.
  if (routeUrl === '/v1/tools/stats') return 'tasks';
  if (routeUrl.startsWith('/v1/tasks') || routeUrl.startsWith('/v1/idempotency-keys')) return 'tasks';
  return 'tools';
}
