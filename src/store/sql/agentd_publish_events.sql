-- The current definition of agentd_publish_events(), as migrations/20261130000010_publish_references.sql left it.
-- A migration that changes it also changes this file: the test
-- `the_sql_definitions_in_src_are_the_databases` (tests/e2e/store.rs) holds the two together.
--
-- Notifications name events instead of carrying them: each is a JSON array of
-- [id, run_id, seq, type] references, in id order, under 8,000 bytes. Building every event's
-- envelope with json_build_object (and looking up its crew) made the trigger cost about
-- 18 µs per event, four times the insert itself, whether or not anyone followed the run; a
-- replica now reads the events somebody on it follows, one query per notification, and a
-- waiter that only needs to know a run has settled reads nothing.
CREATE OR REPLACE FUNCTION agentd_publish_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('agentd_events', '[' || string_agg(item, ',' ORDER BY id) || ']')
       FROM (SELECT id, item, sum(octet_length(item) + 1) OVER (ORDER BY id) / 7000 AS chunk
               FROM (SELECT id, '[' || id || ',"' || run_id || '",' || seq || ',' || to_json(type) || ']' AS item
                       FROM new_events) AS refs) AS sized
      GROUP BY chunk
      ORDER BY min(id);
    RETURN NULL;
END
$$;

-- trigger: CREATE TRIGGER events_publish AFTER INSERT ON public.events REFERENCING NEW TABLE AS new_events FOR EACH STATEMENT EXECUTE FUNCTION agentd_publish_events()
