DROP TABLE tool_catalog;
