-- How many of a tool's tasks the publishing worker runs at once (its slots for the tool), for the
-- console's catalog. NULL: published by a worker from before this column (a rolling deploy), or
-- by one that does not say. Adding a nullable column without a default rewrites nothing.
ALTER TABLE tool_catalog ADD COLUMN concurrency integer;
ALTER TABLE tool_catalog ADD CONSTRAINT tool_catalog_concurrency_check CHECK (concurrency IS NULL OR concurrency > 0);
