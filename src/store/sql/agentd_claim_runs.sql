-- The current definition of agentd_claim_runs(), as migrations/20261207000033_claim_start_time.sql left it.
-- A migration that changes it also changes this file: the test
-- `the_sql_definitions_in_src_are_the_databases` (tests/e2e/store.rs) holds the two together.
--
CREATE OR REPLACE FUNCTION agentd_claim_runs(claimer text, lease float8, wanted integer, reader smallint DEFAULT 1)
RETURNS TABLE (id uuid, tenant text, attempt integer, crew_spec text, inputs text,
               created_at timestamptz, started_at timestamptz, timeout_s integer, paused_s float8,
               max_running integer, max_tokens_per_day int8, max_cost_usd_per_day float8,
               trace_id text, traceparent text, tracestate text, thread_id uuid, thread_history text, forked_from uuid,
               evaluation_id uuid)
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
                             WHERE r.status = 'queued' AND r.tenant = q.name AND r.record_format <= reader
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
                                       AND r.record_format <= reader
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
    -- started_at is the claim's own time (clock_timestamp()): later than the end of every run the
    -- counts above saw end, which now() (the statement's start) need not be.
    WITH claimed AS (
        UPDATE runs AS r
           SET status = 'running', attempt = r.attempt + 1, lease_owner = claimer,
               lease_expires_at = now() + make_interval(secs => lease),
               started_at = coalesce(r.started_at, clock_timestamp()), updated_at = now(),
               last_seq = r.last_seq + 1, record_format = greatest(r.record_format, reader)
         WHERE r.id = ANY (picked)
        RETURNING r.id, r.tenant, r.attempt, r.last_seq, r.crew_spec, r.inputs, r.created_at,
                  r.started_at, r.timeout_s, r.paused_s, r.trace_id, r.traceparent, r.tracestate,
                  r.thread_id, r.thread_history, r.forked_from, r.evaluation_id
    ), started AS (
        INSERT INTO events (run_id, seq, type, data)
        SELECT c.id, c.last_seq, 'run.started',
               jsonb_build_object('attempt', c.attempt, 'worker', claimer)
                 || CASE WHEN c.trace_id IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('trace_id', c.trace_id) END
          FROM claimed AS c
    )
    SELECT c.id, c.tenant, c.attempt, c.crew_spec::text, c.inputs::text, c.created_at, c.started_at,
           c.timeout_s, c.paused_s, n.max_running, n.max_tokens_per_day, n.max_cost_usd_per_day,
           c.trace_id, c.traceparent, c.tracestate, c.thread_id, c.thread_history, c.forked_from,
           c.evaluation_id
      FROM claimed AS c LEFT JOIN tenants AS n ON n.name = c.tenant;
END
$$;
