/** The roles `taskgate start` can run in one process. */
export const ROLES = ['api', 'worker', 'relay'] as const;
export type Role = (typeof ROLES)[number];
