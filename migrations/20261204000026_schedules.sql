-- Schedules: crews that run on their own at the ticks of a cron expression in a time zone. Each
-- handled tick is a row keyed by (schedule, tick): the tick's kickoff, its row and the schedule's
-- advance (`next_run_at`) commit together, under the schedule's row lock, so a tick fires once
-- across all replicas whatever dies when.
CREATE TABLE schedules (
    id           uuid PRIMARY KEY,
    tenant       text NOT NULL REFERENCES tenants (name),
    name         text CHECK (length(name) BETWEEN 1 AND 200),
    cron         text NOT NULL,
    timezone     text NOT NULL,
    -- The kickoff body each tick makes (as POST /v1/kickoffs takes it).
    kickoff      jsonb NOT NULL,
    overlap      text NOT NULL CHECK (overlap IN ('skip', 'enqueue', 'allow')),
    catch_up     text NOT NULL CHECK (catch_up IN ('none', 'latest')),
    enabled      boolean NOT NULL DEFAULT true,
    -- The next tick to handle; NULL while disabled.
    next_run_at  timestamptz,
    last_tick_at timestamptz,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX schedules_tenant ON schedules (tenant, id DESC);
CREATE INDEX schedules_due ON schedules (next_run_at) WHERE enabled;

CREATE TABLE schedule_ticks (
    schedule_id uuid NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
    tick        timestamptz NOT NULL,
    outcome     text NOT NULL CHECK (outcome IN ('kicked', 'skipped', 'missed', 'failed')),
    run_id      uuid,
    error       text,
    handled_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (schedule_id, tick)
);

-- A run a schedule kicked off. `overlap: enqueue` makes a tick's run `waiting` behind the
-- schedule's unfinished runs (unless it joins a thread, which orders its runs itself).
ALTER TABLE runs ADD COLUMN schedule_id uuid;
CREATE INDEX runs_schedule ON runs (schedule_id, created_at, id) WHERE schedule_id IS NOT NULL;

-- The end of a run of a thread or of a schedule queues the next waiting one (see migration 25).
CREATE OR REPLACE FUNCTION agentd_thread_run_ended() RETURNS trigger LANGUAGE plpgsql AS $$
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
DROP TRIGGER runs_thread_run_ended ON runs;
CREATE CONSTRAINT TRIGGER runs_thread_run_ended
    AFTER UPDATE OF status ON runs DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW
    WHEN ((NEW.thread_id IS NOT NULL OR NEW.schedule_id IS NOT NULL)
          AND NEW.status IN ('completed', 'failed', 'cancelled')
          AND OLD.status NOT IN ('completed', 'failed', 'cancelled'))
    EXECUTE FUNCTION agentd_thread_run_ended();
