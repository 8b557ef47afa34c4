-- What lets every task end: the sweeper (packages/db/src/tasks/task-sweeps.ts) ends, once each,
-- tasks nobody else will end — past their max clock, queued longer than the queue bound, asked to
-- cancel with nobody running them, whose pg-boss job ended or vanished without ending them, and
-- request-mode tasks whose API instance is gone. Instances heartbeat here so that "gone" can be told.

-- The pg-boss job that carries the task's current run when it is not the first one: the first
-- job's id is the task's own (NULL here), a parked task's next run gets a new job (answerInput).
ALTER TABLE tasks ADD COLUMN job_id uuid;
-- Tasks resumed before this migration run on a job whose id is not theirs: find it, so the sweeper
-- does not take the first run's completed job for the current one. (On a fresh install pg-boss's
-- schema does not exist yet, and there is nothing to find.)
DO $$
BEGIN
  IF to_regclass('pgboss.job') IS NOT NULL THEN
    UPDATE tasks t SET job_id = j.id
    FROM pgboss.job j
    WHERE j.name = 'taskgate-tasks' AND j.state IN ('created', 'retry', 'active')
      AND j.data->>'taskId' = t.id::text AND j.id <> t.id AND t.status = 'working';
  END IF;
END $$;

-- The API instance holding a request-mode task's request (the caller waits on that instance only).
ALTER TABLE tasks ADD COLUMN api_instance_id text;

-- Every API and worker instance, by the id it puts in tasks (api_instance_id, worker_id).
-- heartbeat_at moves every few seconds while the instance runs; stopped_at is set when it stops
-- gracefully. An instance whose heartbeat is older than the sweeper's bound is lost.
CREATE TABLE instances (
  id           text        PRIMARY KEY,
  kind         text        NOT NULL,
  host         text        NOT NULL,
  pid          integer     NOT NULL,
  started_at   timestamptz NOT NULL DEFAULT now(),
  heartbeat_at timestamptz NOT NULL DEFAULT now(),
  stopped_at   timestamptz,
  CONSTRAINT instances_kind_check CHECK (kind IN ('api', 'worker')),
  CONSTRAINT instances_id_check CHECK (id <> '' AND length(id) <= 200)
);

-- The sweeps, each over the few tasks it can concern (partial indexes stay small: a task leaves
-- them when it ends).
CREATE INDEX tasks_open_max_deadline_idx ON tasks (max_deadline_at)
  WHERE status IN ('working', 'input_required') AND max_deadline_at IS NOT NULL;
CREATE INDEX tasks_queued_idx ON tasks (created_at) WHERE status = 'working' AND started_at IS NULL;
CREATE INDEX tasks_cancel_pending_idx ON tasks (cancel_requested_at)
  WHERE status = 'working' AND cancel_requested_at IS NOT NULL;
CREATE INDEX tasks_open_request_idx ON tasks (api_instance_id)
  WHERE mode = 'request' AND status IN ('working', 'input_required');
