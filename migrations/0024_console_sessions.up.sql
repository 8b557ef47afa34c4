-- Signed-in sessions of the operations console (/ui), created from a token a person pastes into
-- /ui/login (docs/design/console.md). The browser holds a random 32-byte session id in an HttpOnly
-- cookie; this table holds only its SHA-256, so a read of the table gives nobody a session. The
-- token itself is never stored: a static token's SHA-256 (token_digest) lets a session end when
-- its token is taken out of TASKGATE_TOKENS; an OAuth token's session ends at the token's exp at
-- the latest (expires_at). packages/db/src/console-sessions/console-sessions.ts owns this table.
CREATE TABLE console_sessions (
  id_digest    bytea       PRIMARY KEY CHECK (octet_length(id_digest) = 32),
  tenant_id    text        NOT NULL,
  -- An OAuth token's scopes; NULL for a static token, which may do everything its tenant can.
  scopes       text[],
  token_digest text,
  -- Sent back by state-changing requests in X-Taskgate-CSRF (besides a same-origin Origin).
  csrf_token   text        NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  last_seen_at timestamptz NOT NULL DEFAULT now(),
  -- The hard end: the sign-in's absolute bound or the token's exp, whichever is first.
  expires_at   timestamptz NOT NULL,
  ended_at     timestamptz
);
-- The sweep deletes ended and expired sessions, oldest expiry first.
CREATE INDEX console_sessions_expires_idx ON console_sessions (expires_at);
