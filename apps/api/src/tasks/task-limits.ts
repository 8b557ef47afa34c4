/**
 * The longest a finished task is kept (7 days): REST's `ttlMs` and 2025-11-25's `task.ttl` are
 * both bounded by it, so every ttl is far inside the bigint column and the timestamp arithmetic
 * of `expires_at`.
 */
export const MAX_TTL_MS = 7 * 24 * 3600 * 1000;
