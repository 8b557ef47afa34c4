ALTER TABLE mcp_sessions DROP CONSTRAINT mcp_sessions_url_elicitations_check;
ALTER TABLE mcp_sessions DROP COLUMN url_elicitations;
