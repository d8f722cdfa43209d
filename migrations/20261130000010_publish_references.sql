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
