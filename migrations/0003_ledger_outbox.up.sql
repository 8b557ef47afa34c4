-- The idempotency ledger, durable steps, reconciliation items and the transactional outbox.
-- (Business tables belong to tool modules, in their own migrations: see examples/ledger.)

-- A task that carries an idempotency key: the key's row below names the task that holds it.
ALTER TABLE tasks ADD COLUMN idempotency_key text;
ALTER TABLE tasks ADD CONSTRAINT tasks_idempotency_key_check
  CHECK (idempotency_key IS NULL OR idempotency_key <> '');

-- One row per (tenant, key): the business intent a key names. Concurrent claims of one key
-- serialize on the primary key; exactly one inserts it. `pending` means a task holds the key and
-- has not committed its effect; `completed` carries the stored result, which is returned (re-read
-- from JSON) to every later call with the same key and the same fingerprint.
CREATE TABLE idempotency_keys (
  tenant_id    text        NOT NULL,
  key          text        NOT NULL,
  operation    text        NOT NULL,
  -- SHA-256 (hex) of the canonical JSON of {operation, arguments without the key}.
  fingerprint  text        NOT NULL,
  state        text        NOT NULL DEFAULT 'pending',
  result       jsonb,
  task_id      uuid,
  created_at   timestamptz NOT NULL DEFAULT now(),
  completed_at timestamptz,
  expires_at   timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, key),
  CONSTRAINT idempotency_keys_key_check CHECK (key <> '' AND length(key) <= 255),
  CONSTRAINT idempotency_keys_state_check CHECK (state IN ('pending', 'completed')),
  CONSTRAINT idempotency_keys_result_check CHECK ((state = 'completed') = (completed_at IS NOT NULL)),
  CONSTRAINT idempotency_keys_fingerprint_check CHECK (fingerprint ~ '^[0-9a-f]{64}$')
);
CREATE INDEX idempotency_keys_expires_at_idx ON idempotency_keys (expires_at);

-- ctx.step(name, fn): one row per completed step of a task, written by the attempt that ran it.
-- A later attempt (after a worker death or re-delivery) reads it back instead of running the step.
CREATE TABLE task_steps (
  tenant_id  text        NOT NULL,
  task_id    uuid        NOT NULL,
  name       text        NOT NULL,
  result     jsonb       NOT NULL,
  attempt    integer     NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (task_id, name),
  FOREIGN KEY (tenant_id, task_id) REFERENCES tasks (tenant_id, id) ON DELETE CASCADE,
  CONSTRAINT task_steps_name_check CHECK (name <> '' AND length(name) <= 200)
);

-- A call whose outcome is unknown and must not be repeated automatically (an unsafe tool, or a
-- conditional one without a key, whose attempt was lost): a person or a job decides what happened.
CREATE TABLE reconciliation_items (
  id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  tenant_id       text        NOT NULL,
  task_id         uuid        NOT NULL,
  tool            text        NOT NULL,
  idempotency_key text,
  reason          text        NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  resolved_at     timestamptz,
  resolution      text,
  CONSTRAINT reconciliation_items_resolution_check CHECK ((resolved_at IS NULL) = (resolution IS NULL))
);
CREATE UNIQUE INDEX reconciliation_items_task_idx ON reconciliation_items (task_id);
CREATE INDEX reconciliation_items_open_idx ON reconciliation_items (tenant_id, created_at) WHERE resolved_at IS NULL;

-- The transactional outbox: written in the transaction of the change it announces, delivered by
-- apps/relay. A row is due when undelivered, not dead, available, and not leased by a live relay.
CREATE TABLE outbox (
  id             bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  tenant_id      text        NOT NULL,
  aggregate_type text        NOT NULL,
  aggregate_id   text        NOT NULL,
  event_type     text        NOT NULL,
  payload        jsonb       NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now(),
  available_at   timestamptz NOT NULL DEFAULT now(),
  attempts       integer     NOT NULL DEFAULT 0,
  last_error     text,
  -- The relay holding the row, until when: another relay may take it only after the lease ends.
  leased_by      text,
  leased_until   timestamptz,
  delivered_at   timestamptz,
  dead_at        timestamptz,
  CONSTRAINT outbox_attempts_check CHECK (attempts >= 0),
  CONSTRAINT outbox_settled_once_check CHECK (delivered_at IS NULL OR dead_at IS NULL)
);
-- The relay's claim scans pending rows in id order; per-aggregate ordering looks up older pending rows.
CREATE INDEX outbox_pending_idx ON outbox (id) WHERE delivered_at IS NULL AND dead_at IS NULL;
CREATE INDEX outbox_pending_aggregate_idx ON outbox (aggregate_type, aggregate_id, id)
  WHERE delivered_at IS NULL AND dead_at IS NULL;

-- A statement that adds outbox rows wakes the relays once (NOTIFY is only a latency hint; relays poll too).
CREATE FUNCTION taskgate_outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('taskgate_outbox', '');
  RETURN NULL;
END $$;
CREATE TRIGGER outbox_notify AFTER INSERT ON outbox FOR EACH STATEMENT EXECUTE FUNCTION taskgate_outbox_notify();
