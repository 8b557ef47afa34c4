-- Dead-lettered outbox events, counted when /metrics is scraped (pending ones have their index).
--
-- In a migration of its own, with nothing else: the build reads the whole outbox (delivered rows
-- are kept for TASKGATE_OUTBOX_RETENTION_MS) under a SHARE lock, which holds writes of outbox
-- events (a commit with effects) for as long as it takes; nothing else waits with them. A review
-- here measured about 1.4 s for 4.5 million rows. Migrations run in one transaction each, so
-- CREATE INDEX CONCURRENTLY is not available here; an operator with a larger outbox can create
-- the same index concurrently beforehand (IF NOT EXISTS then finds it).
CREATE INDEX IF NOT EXISTS outbox_dead_idx ON outbox (id) WHERE dead_at IS NOT NULL;
