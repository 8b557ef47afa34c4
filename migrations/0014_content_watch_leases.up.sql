-- Which worker runs the watch of a watched (tenant, URI): every worker serving a module could run
-- it, and each would count every change (N notifications per change, N times the watch's own
-- load on whatever it watches). packages/db/src/catalog/content-watches.ts owns this table.
--
-- A worker renews its leases at each read of content_watches (every second by default) and runs
-- only the watches it holds; a lease not renewed for its term (a crashed worker) is taken by the
-- next worker that reads, and one a worker stops wanting, or holds as it stops, is deleted.
CREATE TABLE content_watch_leases (
  tenant_id  text        NOT NULL,
  uri        text        NOT NULL,
  worker_id  text        NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, uri)
);

-- What a worker releases: its own leases.
CREATE INDEX content_watch_leases_worker_idx ON content_watch_leases (worker_id);
