DROP INDEX tasks_open_request_idx;
DROP INDEX tasks_cancel_pending_idx;
DROP INDEX tasks_queued_idx;
DROP INDEX tasks_open_max_deadline_idx;
DROP TABLE instances;
ALTER TABLE tasks DROP COLUMN api_instance_id;
ALTER TABLE tasks DROP COLUMN job_id;
