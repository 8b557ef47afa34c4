-- A console session opened with an operator token (TASKGATE_OPERATOR_TOKENS): it acts for the
-- tenant each request names, so it has none of its own ('*', which no tenant can be named), and
-- it ends when its token leaves TASKGATE_OPERATOR_TOKENS (token_digest). A boolean of its own
-- rather than the '*' alone: what makes a session an operator's is said, not inferred.
ALTER TABLE console_sessions ADD COLUMN operator boolean NOT NULL DEFAULT false;
ALTER TABLE console_sessions ADD CONSTRAINT console_sessions_operator_check
  CHECK ((operator AND tenant_id = '*' AND token_digest IS NOT NULL) OR (NOT operator AND tenant_id <> '*'));
