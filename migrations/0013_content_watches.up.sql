-- Subscriptions to a module's resource that a worker must watch: the API process holding them did
-- not load the module, so the resource's `watch` runs where the module is loaded (a worker serving
-- its content tool). packages/db/src/catalog/content-watches.ts owns this table.
--
-- One row per (API instance, tenant, URI) while any connection of that instance is subscribed: a
-- worker serving `tool` runs one watch per distinct (tenant, URI) whose instance is live, and on
-- each change moves `changes` on every row of it (and NOTIFYs taskgate_content_changed, a latency
-- hint). Each API instance compares its rows' `changes` with what it saw, so a missed NOTIFY only
-- delays a notification by its poll. Rows go with their instance (retention cascades), and a
-- worker ignores rows of an instance that went silent, so a crashed API's watches stop.
CREATE TABLE content_watches (
  api_instance_id text        NOT NULL REFERENCES instances (id) ON DELETE CASCADE,
  -- The content tool that serves the URI (taskgate.content.<module>.<hash>).
  tool            text        COLLATE "C" NOT NULL,
  tenant_id       text        NOT NULL,
  uri             text        NOT NULL,
  changes         bigint      NOT NULL DEFAULT 0,
  created_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (api_instance_id, tenant_id, uri),
  CONSTRAINT content_watches_uri_check CHECK (uri <> '' AND length(uri) <= 2048),
  CONSTRAINT content_watches_tool_check CHECK (tool LIKE 'taskgate.content.%')
);

-- What a worker reads: the rows of the content tools it serves.
CREATE INDEX content_watches_tool_idx ON content_watches (tool);
