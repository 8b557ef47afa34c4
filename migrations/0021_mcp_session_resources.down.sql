ALTER TABLE mcp_sessions DROP COLUMN resource_subscriptions;
