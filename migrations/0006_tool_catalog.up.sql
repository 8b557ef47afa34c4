-- The tool catalog: which tools each worker instance serves, so that API processes, which load no
-- user code, can answer tools/list and check arguments. A worker publishes its definitions once it
-- is registered (packages/db/src/catalog/tool-catalog.ts owns this table); its heartbeat in
-- `instances` is what keeps them listed, so the catalog itself is written only when a worker
-- starts or its tools change. A tool stays listed for a window after its last server's last sign
-- of life, so a rolling restart does not make it blink out of tools/list.
--
-- Readers are told of changes with pg_notify('taskgate_catalog') sent by publishTools in its own
-- transaction, not by a trigger: a worker that restarts under its old id republishes identical
-- rows — no row changes, yet its tools may be listed again — and the rows an instance deletion
-- cascades away belong to an instance long out of the window. NOTIFY is only a latency hint:
-- readers poll as well, and polling is what notices a tool aging out of the window.
CREATE TABLE tool_catalog (
  -- Retention of instances (deleteStaleInstances) takes their catalog rows with them.
  instance_id  text        NOT NULL REFERENCES instances (id) ON DELETE CASCADE,
  -- "C": the listing is ordered by name in byte order, the same order JavaScript sorts in.
  name         text        COLLATE "C" NOT NULL,
  -- SHA-256 (hex) of the canonical definition (toolFingerprint in packages/reliability).
  fingerprint  text        NOT NULL,
  -- The whole published definition; the database reads nothing in it but its name.
  definition   jsonb       NOT NULL,
  -- When this instance last published a different definition under this name.
  published_at timestamptz NOT NULL DEFAULT now(),
  -- Also the index the listing needs: it joins the few recently live instances to their rows, and
  -- the cascade finds an instance's rows by it.
  PRIMARY KEY (instance_id, name),
  CONSTRAINT tool_catalog_name_check CHECK (name <> '' AND length(name) <= 128),
  CONSTRAINT tool_catalog_fingerprint_check CHECK (fingerprint ~ '^[0-9a-f]{64}$'),
  CONSTRAINT tool_catalog_definition_check CHECK (jsonb_typeof(definition) = 'object' AND definition->>'name' = name)
);
