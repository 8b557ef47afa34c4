ALTER TABLE tasks DROP COLUMN client_capabilities;
