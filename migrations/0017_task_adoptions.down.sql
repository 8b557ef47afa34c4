ALTER TABLE tasks DROP COLUMN adoptions;
