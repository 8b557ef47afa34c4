CREATE TABLE notes (
  id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  tenant_id  text        NOT NULL,
  text       text        NOT NULL CHECK (text <> ''),
  task_id    uuid        NOT NULL UNIQUE,
  created_at timestamptz NOT NULL DEFAULT now()
);
