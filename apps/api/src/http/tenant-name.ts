/** What a tenant may be called, whether a static token or a token's claim names it. */
export const TENANT_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;
