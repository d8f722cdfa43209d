-- Publish a statement's events with one trigger call instead of one per row (a journal commit
-- inserts the events of many runs in one statement), and several events per notification: a
-- notification's payload is now a JSON array of envelopes in id order, under 8,000 bytes (an
-- envelope over 3,800 bytes goes as a reference, {"id", "run_id", "seq", "ref": true}, that
-- listeners read from the table). Each notification costs the server work at commit (it is queued,
-- checked against the transaction's others, read by every listening session), so fewer, fuller ones
-- are cheaper. The crew name is looked up per event by the primary key: a join could read all of
-- runs on every statement.
DROP TRIGGER events_publish ON events;
DROP FUNCTION agentd_publish_event();

CREATE FUNCTION agentd_publish_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('agentd_events', bundle.payload)
       FROM (SELECT '[' || string_agg(item, ',' ORDER BY id) || ']' AS payload, min(id) AS first
               FROM (SELECT id, item, sum(octet_length(item) + 1) OVER (ORDER BY id) / 3900 AS chunk
                       FROM (SELECT e.id,
                                    CASE WHEN octet_length(envelope) > 3800
                                         THEN json_build_object('id', e.id, 'run_id', e.run_id, 'seq', e.seq,
                                                                'ref', true)::text
                                         ELSE envelope END AS item
                               FROM (SELECT n.id, n.run_id, n.seq,
                                            json_build_object(
                                                'id', n.id, 'run_id', n.run_id, 'seq', n.seq, 'type', n.type,
                                                'task', n.task, 'agent', n.agent, 'data', n.data, 'at', n.at,
                                                'crew', (SELECT crew_name FROM runs WHERE runs.id = n.run_id)
                                            )::text AS envelope
                                       FROM new_events AS n) AS e) AS sized) AS chunked
              GROUP BY chunk
              ORDER BY first) AS bundle;
    RETURN NULL;
END
$$;

CREATE TRIGGER events_publish AFTER INSERT ON events REFERENCING NEW TABLE AS new_events
    FOR EACH STATEMENT EXECUTE FUNCTION agentd_publish_events();
