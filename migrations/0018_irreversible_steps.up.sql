-- Irreversible steps and what reconciliation knows about them.
--
-- ctx.step(name, fn, { irreversible: true }) writes its row as `started` before fn runs and as
-- `done` with fn's result after (packages/db/src/tasks/task-steps.ts). A task that then ends failed
-- or cancelled — a cancel, a clock, a crash, a refused retry — leaves an effect behind that nobody
-- will undo: an abandoned-with-effects item when every irreversible step finished, an
-- unknown-outcome item when one started and never recorded how it went (the worker died, or fn
-- threw, mid-payment).
--
-- A task that completes with an irreversible step still `started` (its handler caught the step's
-- error and went on) opens an unknown-outcome item too.
--
-- The item is opened by a trigger, in the transaction of the terminal transition itself: the
-- transitions are written by the worker, the sweeper, the API's cancel of a parked task and the
-- timeout write, and a crash between a transition and a separate insert would lose the item.
-- The irreversible step's start locks the task row FOR SHARE (task-steps.ts), so a transition
-- either sees the step's row or the step is refused.
--
-- Every CHECK is NOT VALID and every new column has a constant default: Postgres then rewrites and
-- scans nothing while it holds ACCESS EXCLUSIVE (old rows satisfy the checks by construction; new
-- rows are checked).

ALTER TABLE task_steps
  ADD COLUMN irreversible boolean NOT NULL DEFAULT false,
  ADD COLUMN state text NOT NULL DEFAULT 'done',
  ALTER COLUMN result DROP NOT NULL;
ALTER TABLE task_steps ADD CONSTRAINT task_steps_state_check
  CHECK (state IN ('started', 'done') AND (state = 'done') = (result IS NOT NULL)
         AND (state = 'done' OR irreversible)) NOT VALID;

ALTER TABLE reconciliation_items
  ADD COLUMN kind text NOT NULL DEFAULT 'unknown_outcome',
  ADD COLUMN details jsonb NOT NULL DEFAULT '{}',
  ADD COLUMN resolved_by text;
ALTER TABLE reconciliation_items ADD CONSTRAINT reconciliation_items_kind_check
  CHECK (kind IN ('unknown_outcome', 'abandoned_with_effects')) NOT VALID;
ALTER TABLE reconciliation_items ADD CONSTRAINT reconciliation_items_resolved_by_check
  CHECK ((resolved_at IS NULL) = (resolved_by IS NULL)) NOT VALID;

-- What is known about a task when its item opens: how it ended, its last progress (what a
-- downstream last reported) and its steps, with the results of the irreversible ones (a payment id
-- is what a person reconciling needs).
CREATE FUNCTION taskgate_reconciliation_details(p_task uuid) RETURNS jsonb
LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object(
    'status', t.status,
    'statusMessage', t.status_message,
    'attempt', t.attempt,
    'cancelReason', t.cancel_reason,
    'lastProgress', CASE WHEN t.progress_value IS NULL THEN NULL ELSE jsonb_build_object(
      'progress', t.progress_value, 'total', t.progress_total, 'message', t.progress_message) END,
    'steps', COALESCE((
      SELECT jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
               'name', s.name, 'state', s.state, 'irreversible', s.irreversible, 'attempt', s.attempt,
               'at', s.created_at, 'result', CASE WHEN s.irreversible THEN s.result END))
             ORDER BY s.created_at, s.name)
      FROM task_steps s WHERE s.task_id = t.id), '[]'::jsonb))
  FROM tasks t WHERE t.id = p_task
$$;

CREATE FUNCTION taskgate_tasks_abandoned() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  unknown boolean;
BEGIN
  SELECT bool_or(state = 'started') INTO unknown
  FROM task_steps WHERE task_id = NEW.id AND irreversible;
  IF unknown IS NULL THEN
    RETURN NULL; -- no irreversible step: nothing was left behind
  END IF;
  -- A completed task left nothing behind, unless its handler went on past a step whose outcome
  -- is unknown (it caught the step's error and returned): that still needs someone to look.
  IF NEW.status = 'completed' AND NOT unknown THEN
    RETURN NULL;
  END IF;
  INSERT INTO reconciliation_items (tenant_id, task_id, tool, idempotency_key, reason, kind, details)
  VALUES (
    NEW.tenant_id, NEW.id, NEW.tool, NEW.idempotency_key,
    CASE WHEN NEW.status = 'completed'
      THEN 'the task completed while an irreversible step''s outcome was unknown'
      WHEN unknown
      THEN format('the task ended %s while an irreversible step''s outcome was unknown', NEW.status)
      ELSE format('the task ended %s after an irreversible step took effect', NEW.status) END,
    CASE WHEN unknown THEN 'unknown_outcome' ELSE 'abandoned_with_effects' END,
    taskgate_reconciliation_details(NEW.id))
  -- An item the worker opened first (a refused retry) keeps its reason; it learns the ending.
  ON CONFLICT (task_id) DO UPDATE SET details = EXCLUDED.details
    WHERE reconciliation_items.resolved_at IS NULL;
  RETURN NULL;
END;
$$;

CREATE TRIGGER tasks_abandoned AFTER UPDATE OF status ON tasks
  FOR EACH ROW
  WHEN (NEW.status IN ('completed', 'failed', 'cancelled') AND OLD.status NOT IN ('completed', 'failed', 'cancelled'))
  EXECUTE FUNCTION taskgate_tasks_abandoned();

-- Items by tenant, newest first, whatever their state (the REST list and `taskgate reconcile list`).
CREATE INDEX reconciliation_items_tenant_idx ON reconciliation_items (tenant_id, id);
