ALTER TABLE tasks DROP CONSTRAINT tasks_input_requests_check;
ALTER TABLE tasks DROP COLUMN input_requests, DROP COLUMN input_responses;
