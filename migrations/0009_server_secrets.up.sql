-- Secrets every API instance must share, made once by whichever instance needs one first: the key
-- that signs MCP requestState (2026-07-28 multi round-trip), so that a retry may land on any
-- instance and across restarts. packages/db/src/secrets/server-secrets.ts owns this table.
CREATE TABLE server_secrets (
  name       text        PRIMARY KEY,
  secret     bytea       NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT server_secrets_name_check CHECK (name ~ '^[a-z][a-z0-9_-]{0,63}$'),
  CONSTRAINT server_secrets_length_check CHECK (octet_length(secret) >= 32)
);
