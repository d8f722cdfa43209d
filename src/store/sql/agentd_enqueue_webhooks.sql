-- The current definition of agentd_enqueue_webhooks(), as migrations/20261204000024_webhook_fanout_locks_endpoints_first.sql left it.
-- A migration that changes it also changes this file: the test
-- `the_sql_definitions_in_src_are_the_databases` (tests/e2e/store.rs) holds the two together.
--
-- The webhook fan-out (events_webhooks) locks the endpoints it delivers to (FOR KEY SHARE, in id
-- order) before it inserts deliveries and bumps queues. Before, the queue row was locked first
-- and the endpoint only by the deliveries' foreign-key check at the end of the statement, so a
-- concurrent DELETE of the endpoint (which locks the endpoint, then cascades to its queues)
-- deadlocked with the journal's commit, or failed it with a foreign-key violation when the
-- endpoint was deleted between the commit's snapshot and its check: an unrelated run's journal
-- commit could fail because someone deleted a webhook. Now the commit waits for the DELETE and
-- then finds the endpoint gone (READ COMMITTED re-checks a locked row): no delivery to it, no error.
CREATE OR REPLACE FUNCTION agentd_enqueue_webhooks() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    queued integer;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM webhook_endpoints) THEN
        RETURN NULL;
    END IF;
    WITH candidates AS (
        SELECT w.id AS endpoint_id, n.run_id, n.seq, n.id AS event_id
          FROM new_events AS n
          JOIN webhook_endpoints AS w ON w.run_id = n.run_id
         WHERE agentd_webhook_matches(w.events, n.type)
        UNION ALL
        SELECT w.id, n.run_id, n.seq, n.id
          FROM new_events AS n
          JOIN runs AS r ON r.id = n.run_id
          JOIN webhook_endpoints AS w ON w.run_id IS NULL AND w.tenant = r.tenant
         WHERE agentd_webhook_matches(w.events, n.type)
           AND (w.crew IS NULL OR w.crew = r.crew_name)
    ), locked AS (
        SELECT w.id FROM webhook_endpoints AS w
         WHERE w.id IN (SELECT c.endpoint_id FROM candidates AS c)
         ORDER BY w.id
           FOR KEY SHARE
    ), matched AS (
        INSERT INTO webhook_deliveries (endpoint_id, run_id, seq, event_id)
        SELECT c.endpoint_id, c.run_id, c.seq, c.event_id
          FROM candidates AS c
         WHERE c.endpoint_id IN (SELECT l.id FROM locked AS l)
        ORDER BY c.endpoint_id, c.run_id, c.seq
        RETURNING endpoint_id, run_id
    ), counted AS (
        INSERT INTO webhook_queues AS q (endpoint_id, run_id, pending)
        SELECT endpoint_id, run_id, count(*) FROM matched GROUP BY endpoint_id, run_id
        ON CONFLICT (endpoint_id, run_id) DO UPDATE SET pending = q.pending + excluded.pending
        RETURNING 1
    )
    SELECT count(*) INTO queued FROM counted;
    IF queued > 0 THEN
        PERFORM pg_notify('agentd_webhooks', '');
    END IF;
    RETURN NULL;
END
$$;

-- trigger: CREATE TRIGGER events_webhooks AFTER INSERT ON public.events REFERENCING NEW TABLE AS new_events FOR EACH STATEMENT EXECUTE FUNCTION agentd_enqueue_webhooks()
