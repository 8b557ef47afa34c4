-- Tasks and their append-only history.
--
-- A task is one tool call. It is created `working`, may move between `working` and
-- `input_required`, and ends in exactly one terminal state. The single terminal transition is made
-- by a conditional UPDATE in packages/db; the constraints below make the rows that such an UPDATE
-- may produce self-consistent, whoever writes them.

CREATE TABLE tasks (
  id                  uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
  tenant_id           text        NOT NULL,
  tool                text        NOT NULL,
  arguments           jsonb       NOT NULL DEFAULT '{}'::jsonb,
  status              text        NOT NULL DEFAULT 'working',
  status_message      text,
  result              jsonb,
  error               jsonb,
  -- request: bound to a live request (a closed stream cancels it);
  -- task: outlives the connection and is polled or watched.
  mode                text        NOT NULL DEFAULT 'task',
  cancel_requested_at timestamptz,
  cancel_reason       text,
  progress_value      double precision,
  progress_total      double precision,
  progress_message    text,
  progress_token      jsonb,
  -- The two clocks: idle (reset only by real progress) and max (from start, never reset).
  idle_timeout_ms     integer,
  max_timeout_ms      integer,
  idle_deadline_at    timestamptz,
  max_deadline_at     timestamptz,
  ttl_ms              bigint,
  poll_interval_ms    integer,
  attempt             integer     NOT NULL DEFAULT 0,
  worker_id           text,
  heartbeat_at        timestamptz,
  created_at          timestamptz NOT NULL DEFAULT now(),
  last_updated_at     timestamptz NOT NULL DEFAULT now(),
  started_at          timestamptz,
  finished_at         timestamptz,
  -- finished_at + ttl_ms, set with the terminal transition; the retention sweep deletes past it.
  expires_at          timestamptz,

  CONSTRAINT tasks_status_check
    CHECK (status IN ('working', 'input_required', 'completed', 'failed', 'cancelled')),
  CONSTRAINT tasks_mode_check
    CHECK (mode IN ('request', 'task')),
  CONSTRAINT tasks_tenant_id_check
    CHECK (tenant_id <> ''),
  CONSTRAINT tasks_tool_check
    CHECK (tool <> ''),
  -- finished_at is set exactly when the task is terminal.
  CONSTRAINT tasks_finished_iff_terminal_check
    CHECK ((status IN ('completed', 'failed', 'cancelled')) = (finished_at IS NOT NULL)),
  CONSTRAINT tasks_result_only_completed_check
    CHECK (result IS NULL OR status = 'completed'),
  CONSTRAINT tasks_error_only_failed_check
    CHECK (error IS NULL OR status = 'failed'),
  CONSTRAINT tasks_cancel_reason_check
    CHECK (cancel_reason IS NULL OR cancel_requested_at IS NOT NULL),
  CONSTRAINT tasks_attempt_check
    CHECK (attempt >= 0),
  CONSTRAINT tasks_timeouts_check
    CHECK ((idle_timeout_ms IS NULL OR idle_timeout_ms > 0) AND (max_timeout_ms IS NULL OR max_timeout_ms > 0)),
  CONSTRAINT tasks_ttl_check
    CHECK ((ttl_ms IS NULL OR ttl_ms > 0) AND (poll_interval_ms IS NULL OR poll_interval_ms > 0)),
  CONSTRAINT tasks_progress_check
    CHECK (progress_total IS NULL OR progress_total >= 0)
);

-- Tenant-scoped reads (`WHERE tenant_id = $1 AND id = $2`), and the target of task_events'
-- composite foreign key, which guarantees an event never points at another tenant's task.
CREATE UNIQUE INDEX tasks_tenant_id_id_key ON tasks (tenant_id, id);

-- Listing a tenant's tasks by status with keyset pagination on (created_at, id).
CREATE INDEX tasks_tenant_status_created_idx ON tasks (tenant_id, status, created_at, id);

-- Listing a tenant's tasks without a status filter, same keyset.
CREATE INDEX tasks_tenant_created_idx ON tasks (tenant_id, created_at, id);

-- The retention sweep: terminal tasks past their expiry.
CREATE INDEX tasks_expires_at_idx ON tasks (expires_at) WHERE expires_at IS NOT NULL;

CREATE TABLE task_events (
  id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  tenant_id   text        NOT NULL,
  task_id     uuid        NOT NULL,
  type        text        NOT NULL,
  from_status text,
  to_status   text,
  attempt     integer,
  reason      text,
  data        jsonb,
  created_at  timestamptz NOT NULL DEFAULT now(),

  CONSTRAINT task_events_task_fkey
    FOREIGN KEY (tenant_id, task_id) REFERENCES tasks (tenant_id, id) ON DELETE CASCADE,
  CONSTRAINT task_events_type_check
    CHECK (type IN ('created', 'status_changed', 'cancel_requested', 'attempt_started', 'attempt_lost')),
  CONSTRAINT task_events_status_check
    CHECK (
      (from_status IS NULL OR from_status IN ('working', 'input_required', 'completed', 'failed', 'cancelled'))
      AND (to_status IS NULL OR to_status IN ('working', 'input_required', 'completed', 'failed', 'cancelled'))
    ),
  CONSTRAINT task_events_status_change_check
    CHECK (type <> 'status_changed' OR (from_status IS NOT NULL AND to_status IS NOT NULL AND from_status <> to_status))
);

-- A task's history in order (the identity column orders events of one task).
CREATE INDEX task_events_task_idx ON task_events (task_id, id);
