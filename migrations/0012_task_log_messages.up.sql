-- ctx.log() of a durable task (server/utilities/logging): the messages reach the client whose
-- request waits for the task, through whichever API instance holds that request, so they are kept
-- with the task. packages/db/src/tasks/task-log-messages.ts owns the table and both columns.
--
-- tasks.log_level: the level the calling request asked for (a 2026-07-28 request's _meta, a
-- handshake session's logging/setLevel); NULL: it asked for none, and nothing is written.
-- tasks.log_count: how many messages the task has; an API instance reads a task's row, sees the
-- count grow, and fetches only the new ones.
ALTER TABLE tasks
  ADD COLUMN log_level text
    CONSTRAINT tasks_log_level_check
    CHECK (log_level IN ('debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency')),
  ADD COLUMN log_count integer NOT NULL DEFAULT 0
    CONSTRAINT tasks_log_count_check CHECK (log_count >= 0);

CREATE TABLE task_log_messages (
  tenant_id  text        NOT NULL,
  task_id    uuid        NOT NULL,
  -- 1, 2, ... per task, in the order the handler logged them (across attempts).
  seq        integer     NOT NULL,
  attempt    integer     NOT NULL,
  level      text        NOT NULL
    CONSTRAINT task_log_messages_level_check
    CHECK (level IN ('debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency')),
  logger     text,
  data       jsonb       NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (task_id, seq),
  FOREIGN KEY (tenant_id, task_id) REFERENCES tasks (tenant_id, id) ON DELETE CASCADE
);
