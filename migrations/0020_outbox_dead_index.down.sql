DROP INDEX outbox_dead_idx;
