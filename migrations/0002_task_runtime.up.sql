-- The Postgres twin of the task state machine (packages/reliability/src/task-state.ts), and the
-- event types the worker runtime records.
--
-- The conditional UPDATEs in packages/db/src/tasks/ already make exactly one terminal transition
-- win; this trigger makes every other writer (a console session, a future module, a bug) obey the
-- same rules: a terminal task never changes again, a status moves only along the machine's edges,
-- and a task's identity (tenant, tool, arguments, creation time) is immutable.

CREATE FUNCTION taskgate_tasks_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.status IN ('completed', 'failed', 'cancelled') THEN
    RAISE EXCEPTION 'task % is already %; a terminal task never changes', OLD.id, OLD.status
      USING ERRCODE = 'check_violation', CONSTRAINT = 'tasks_terminal_immutable';
  END IF;
  IF NEW.status IS DISTINCT FROM OLD.status
     AND NOT (
       (OLD.status = 'working' AND NEW.status = 'input_required')
       OR (OLD.status = 'input_required' AND NEW.status = 'working')
       OR (NEW.status IN ('completed', 'failed', 'cancelled'))
     ) THEN
    RAISE EXCEPTION 'task % cannot move from % to %', OLD.id, OLD.status, NEW.status
      USING ERRCODE = 'check_violation', CONSTRAINT = 'tasks_status_transition';
  END IF;
  IF NEW.tenant_id IS DISTINCT FROM OLD.tenant_id
     OR NEW.tool IS DISTINCT FROM OLD.tool
     OR NEW.arguments IS DISTINCT FROM OLD.arguments
     OR NEW.created_at IS DISTINCT FROM OLD.created_at
     OR NEW.id IS DISTINCT FROM OLD.id THEN
    RAISE EXCEPTION 'task % changed its identity (tenant, tool, arguments or creation time)', OLD.id
      USING ERRCODE = 'check_violation', CONSTRAINT = 'tasks_identity_immutable';
  END IF;
  NEW.last_updated_at := now();
  RETURN NEW;
END;
$$;

CREATE TRIGGER tasks_guard BEFORE UPDATE ON tasks
  FOR EACH ROW EXECUTE FUNCTION taskgate_tasks_guard();

-- cancel_observed: the worker saw the cancel request (the worker's acknowledgement; the terminal
-- `cancelled` follows when the handler has unwound). attempt_released: a worker shutting down
-- handed the task back for another worker to run.
ALTER TABLE task_events DROP CONSTRAINT task_events_type_check;
ALTER TABLE task_events ADD CONSTRAINT task_events_type_check
  CHECK (type IN ('created', 'status_changed', 'cancel_requested', 'cancel_observed', 'attempt_started',
                  'attempt_lost', 'attempt_released'));

-- The cancel watcher's fallback poll and the progress writes look tasks up by id only; the primary
-- key serves them. Working tasks by worker, for a worker's own bookkeeping and for operators.
CREATE INDEX tasks_worker_active_idx ON tasks (worker_id) WHERE status IN ('working', 'input_required');
