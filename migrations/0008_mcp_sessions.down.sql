DROP TABLE mcp_sessions;
