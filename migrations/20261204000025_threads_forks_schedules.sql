-- Threads, forks and retries, and schedules.
--
-- Threads: a tenant's conversations of runs. A kickoff with `thread_id` joins a thread; its first
-- task sees the thread's earlier runs (their inputs and final outputs), which the run's first claim
-- renders into `thread_history` (kept, so every attempt sees the same). A thread runs one run at a
-- time: a kickoff while another run of the thread is unfinished is refused, cancels it
-- (`interrupt`, `rollback`: that run is deleted once it ends) or waits behind it (`enqueue`): such a
-- run is `waiting`, which no claim takes, until the thread's last unfinished run ends.
CREATE TABLE threads (
    id         uuid PRIMARY KEY,
    tenant     text NOT NULL REFERENCES tenants (name),
    metadata   jsonb NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX threads_tenant ON threads (tenant, id DESC);
CREATE INDEX threads_metadata ON threads USING gin (metadata jsonb_path_ops);

-- No foreign key to threads (runs are written at the kickoff rate; see migration 17): a thread's
-- runs go with it (DELETE /v1/threads/{id}).
ALTER TABLE runs
    ADD COLUMN thread_id uuid,
    ADD COLUMN history_runs integer CHECK (history_runs BETWEEN 0 AND 100),
    ADD COLUMN thread_history text,
    ADD COLUMN discard_on_end boolean NOT NULL DEFAULT false;
CREATE INDEX runs_thread ON runs (thread_id, created_at, id) WHERE thread_id IS NOT NULL;

-- Forks: a run started from another's journal, the tasks before `forked_at` taken over done (their
-- rows, messages, tool calls and events copied), the rest run anew. Its first claim reads its
-- journal (any other run's first claim need not).
ALTER TABLE runs
    ADD COLUMN forked_from uuid,
    ADD COLUMN forked_at text;

ALTER TABLE runs DROP CONSTRAINT runs_status_check;
ALTER TABLE runs ADD CONSTRAINT runs_status_check CHECK (status IN
    ('queued', 'waiting', 'running', 'awaiting_input', 'completed', 'failed', 'cancelling', 'cancelled'));

-- Remove runs with their journals (the journal's tables hold no foreign key to runs; see
-- migration 11) and their idempotency keys; the rows removed in all. Retention, DELETE
-- /v1/runs/{id}, DELETE /v1/threads/{id} and a rolled-back run use it.
CREATE FUNCTION agentd_remove_runs(ids uuid[]) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    removed bigint := 0;
    n bigint;
BEGIN
    IF cardinality(ids) = 0 THEN
        RETURN 0;
    END IF;
    DELETE FROM events WHERE run_id = ANY (ids);
    GET DIAGNOSTICS n = ROW_COUNT; removed := removed + n;
    DELETE FROM messages WHERE run_id = ANY (ids);
    GET DIAGNOSTICS n = ROW_COUNT; removed := removed + n;
    DELETE FROM tool_calls WHERE run_id = ANY (ids);
    GET DIAGNOSTICS n = ROW_COUNT; removed := removed + n;
    DELETE FROM run_usage WHERE run_id = ANY (ids);
    GET DIAGNOSTICS n = ROW_COUNT; removed := removed + n;
    DELETE FROM run_tasks WHERE run_id = ANY (ids);
    GET DIAGNOSTICS n = ROW_COUNT; removed := removed + n;
    -- A key names the runs it created (several for a batch); it goes with any of them.
    DELETE FROM idempotency_keys WHERE run_ids && ids;
    GET DIAGNOSTICS n = ROW_COUNT; removed := removed + n;
    DELETE FROM runs WHERE id = ANY (ids);
    GET DIAGNOSTICS n = ROW_COUNT; removed := removed + n;
    RETURN removed;
END
$$;

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


-- When a run of a thread or of a schedule ends (at the commit that ends it): a rolled-back run is
-- removed, and when the thread (the schedule) has no unfinished run left its oldest waiting run is
-- queued. The thread's (schedule's) row lock orders this against kickoffs into the thread and the
-- schedule's ticks (which take it first, and never wait for a run's row while holding it).
CREATE FUNCTION agentd_queue_next_waiting() RETURNS trigger LANGUAGE plpgsql AS $$
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
CREATE CONSTRAINT TRIGGER runs_queue_next_waiting
    AFTER UPDATE OF status ON runs DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW
    WHEN ((NEW.thread_id IS NOT NULL OR NEW.schedule_id IS NOT NULL)
          AND NEW.status IN ('completed', 'failed', 'cancelled')
          AND OLD.status NOT IN ('completed', 'failed', 'cancelled'))
    EXECUTE FUNCTION agentd_queue_next_waiting();

-- The claim returns the run's thread and its rendered history, and whether it is a fork.
DROP FUNCTION agentd_claim_runs(text, float8, integer);
CREATE FUNCTION agentd_claim_runs(claimer text, lease float8, wanted integer)
RETURNS TABLE (id uuid, tenant text, attempt integer, crew_spec text, inputs text,
               created_at timestamptz, started_at timestamptz, timeout_s integer, paused_s float8,
               max_running integer, max_tokens_per_day int8, max_cost_usd_per_day float8,
               trace_id text, traceparent text, tracestate text, thread_id uuid, thread_history text, forked_from uuid)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    first_tenant text;
    queued text[];
    rooms integer[];
    runnings integer[];
    capped text;
    share integer;
    picked uuid[];
    taken integer;
BEGIN
    SELECT r.tenant INTO first_tenant FROM runs AS r WHERE r.status = 'queued' ORDER BY r.tenant LIMIT 1;
    IF first_tenant IS NULL OR wanted < 1 THEN
        RETURN;
    END IF;
    -- Every tenant with queued runs: one index probe each (a loose index scan).
    WITH RECURSIVE t(name) AS (
        SELECT first_tenant
        UNION ALL
        SELECT (SELECT r.tenant FROM runs AS r
                 WHERE r.status = 'queued' AND r.tenant > t.name ORDER BY r.tenant LIMIT 1)
          FROM t WHERE t.name IS NOT NULL
    )
    SELECT array_agg(t.name ORDER BY t.name) INTO queued FROM t WHERE t.name IS NOT NULL;
    FOR capped IN SELECT n.name FROM tenants AS n
                   WHERE n.name = ANY (queued) AND n.max_running IS NOT NULL ORDER BY n.name LOOP
        PERFORM pg_advisory_xact_lock(hashtextextended('agentd.tenant.running:' || capped, 0));
    END LOOP;
    -- A new statement: its snapshot sees the claims of the turns before ours. With more than
    -- one tenant queued (or a cap), count what each has running: the fewer, the sooner.
    SELECT array_agg(x.running ORDER BY x.ord),
           array_agg(CASE WHEN x.max_running IS NULL THEN wanted
                          ELSE least(wanted, greatest(x.max_running - x.running, 0))::integer END ORDER BY x.ord)
      INTO runnings, rooms
      FROM (SELECT q.ord, n.max_running,
                   CASE WHEN cardinality(queued) > 1 OR n.max_running IS NOT NULL
                        THEN (SELECT count(*) FROM runs AS r
                               WHERE r.tenant = q.name AND r.status IN ('running', 'cancelling'))::integer
                        ELSE 0 END AS running
              FROM unnest(queued) WITH ORDINALITY AS q(name, ord)
              LEFT JOIN tenants AS n ON n.name = q.name) AS x;
    share := greatest(ceil(wanted::numeric / cardinality(queued))::integer, 1);
    -- The shares: each tenant's oldest runs, taken in turns that start with the tenants running
    -- the fewest (a tenant running 3 has its first queued run placed as another's fourth).
    SELECT array_agg(s.id ORDER BY s.turn, s.created_at, s.id) INTO picked
      FROM (SELECT c.id, c.created_at,
                   q.running + row_number() OVER (PARTITION BY q.name ORDER BY c.created_at, c.id) AS turn
              FROM unnest(queued, rooms, runnings) AS q(name, room, running),
                   LATERAL (SELECT r.id, r.created_at FROM runs AS r
                             WHERE r.status = 'queued' AND r.tenant = q.name
                             ORDER BY r.created_at, r.id
                             LIMIT least(q.room, share)
                             FOR UPDATE SKIP LOCKED) AS c
             WHERE q.room > 0) AS s;
    picked := coalesce(picked[1:wanted], '{}');
    taken := cardinality(picked);
    -- The rest of the batch: the oldest runs of the tenants with room beyond their share.
    IF taken < wanted THEN
        picked := picked || coalesce((
            SELECT array_agg(f.id ORDER BY f.created_at, f.id)
              FROM (SELECT c.id, c.created_at
                      FROM unnest(queued, rooms) AS q(name, room),
                           LATERAL (SELECT r.id, r.created_at FROM runs AS r
                                     WHERE r.status = 'queued' AND r.tenant = q.name AND r.id <> ALL (picked)
                                     ORDER BY r.created_at, r.id
                                     LIMIT least(q.room - share, wanted - taken)
                                     FOR UPDATE SKIP LOCKED) AS c
                     WHERE q.room > share
                     ORDER BY c.created_at, c.id
                     LIMIT wanted - taken) AS f), '{}');
    END IF;
    IF cardinality(picked) = 0 THEN
        RETURN;
    END IF;
    RETURN QUERY
    WITH claimed AS (
        UPDATE runs AS r
           SET status = 'running', attempt = r.attempt + 1, lease_owner = claimer,
               lease_expires_at = now() + make_interval(secs => lease),
               started_at = coalesce(r.started_at, now()), updated_at = now(),
               last_seq = r.last_seq + 1
         WHERE r.id = ANY (picked)
        RETURNING r.id, r.tenant, r.attempt, r.last_seq, r.crew_spec, r.inputs, r.created_at,
                  r.started_at, r.timeout_s, r.paused_s, r.trace_id, r.traceparent, r.tracestate,
                  r.thread_id, r.thread_history, r.forked_from
    ), started AS (
        INSERT INTO events (run_id, seq, type, data)
        SELECT c.id, c.last_seq, 'run.started',
               jsonb_build_object('attempt', c.attempt, 'worker', claimer)
                 || CASE WHEN c.trace_id IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('trace_id', c.trace_id) END
          FROM claimed AS c
    )
    SELECT c.id, c.tenant, c.attempt, c.crew_spec::text, c.inputs::text, c.created_at, c.started_at,
           c.timeout_s, c.paused_s, n.max_running, n.max_tokens_per_day, n.max_cost_usd_per_day,
           c.trace_id, c.traceparent, c.tracestate, c.thread_id, c.thread_history, c.forked_from
      FROM claimed AS c LEFT JOIN tenants AS n ON n.name = c.tenant;
END
$$;
