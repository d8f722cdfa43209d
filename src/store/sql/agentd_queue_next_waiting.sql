-- The current definition of agentd_queue_next_waiting(), as migrations/20261204000025_threads_forks_schedules.sql left it.
-- A migration that changes it also changes this file: the test
-- `the_sql_definitions_in_src_are_the_databases` (tests/e2e/store.rs) holds the two together.
--
-- When a run of a thread or of a schedule ends (at the commit that ends it): a rolled-back run is
-- removed, and when the thread (the schedule) has no unfinished run left its oldest waiting run is
-- queued. The thread's (schedule's) row lock orders this against kickoffs into the thread and the
-- schedule's ticks (which take it first, and never wait for a run's row while holding it).
CREATE OR REPLACE FUNCTION agentd_queue_next_waiting() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    next_run uuid;
BEGIN
    IF NEW.thread_id IS NOT NULL THEN
        PERFORM 1 FROM threads WHERE id = NEW.thread_id FOR UPDATE;
    ELSE
        PERFORM 1 FROM schedules WHERE id = NEW.schedule_id FOR UPDATE;
    END IF;
    IF NEW.discard_on_end THEN
        PERFORM agentd_remove_runs(ARRAY[NEW.id]);
    END IF;
    IF NEW.thread_id IS NOT NULL THEN
        IF EXISTS (SELECT 1 FROM runs
                    WHERE thread_id = NEW.thread_id AND status IN ('queued', 'running', 'awaiting_input', 'cancelling')) THEN
            RETURN NULL;
        END IF;
        UPDATE runs SET status = 'queued', updated_at = now()
         WHERE id = (SELECT id FROM runs WHERE thread_id = NEW.thread_id AND status = 'waiting'
                      ORDER BY created_at, id LIMIT 1)
        RETURNING id INTO next_run;
    ELSE
        IF EXISTS (SELECT 1 FROM runs
                    WHERE schedule_id = NEW.schedule_id AND status IN ('queued', 'running', 'awaiting_input', 'cancelling')) THEN
            RETURN NULL;
        END IF;
        UPDATE runs SET status = 'queued', updated_at = now()
         WHERE id = (SELECT id FROM runs WHERE schedule_id = NEW.schedule_id AND status = 'waiting'
                      ORDER BY created_at, id LIMIT 1)
        RETURNING id INTO next_run;
    END IF;
    IF next_run IS NOT NULL THEN
        PERFORM pg_notify('agentd_runs', next_run::text);
    END IF;
    RETURN NULL;
END
$$;

-- trigger: CREATE CONSTRAINT TRIGGER runs_queue_next_waiting AFTER UPDATE OF status ON public.runs DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN ((((new.thread_id IS NOT NULL) OR (new.schedule_id IS NOT NULL)) AND (new.status = ANY (ARRAY['completed'::text, 'failed'::text, 'cancelled'::text])) AND (old.status <> ALL (ARRAY['completed'::text, 'failed'::text, 'cancelled'::text])))) EXECUTE FUNCTION agentd_queue_next_waiting()
