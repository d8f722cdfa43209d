-- Publish a statement's events with one trigger call instead of one per row (a journal commit
-- inserts the events of many runs in one statement): the same notification per event as before,
-- the envelope built by one query over the statement's new rows, in id order.
DROP TRIGGER events_publish ON events;
DROP FUNCTION agentd_publish_event();

CREATE FUNCTION agentd_publish_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('agentd_events', CASE WHEN octet_length(envelope.payload) > 7900
                                            THEN json_build_object('id', envelope.id, 'run_id', envelope.run_id,
                                                                   'seq', envelope.seq, 'ref', true)::text
                                            ELSE envelope.payload END)
       FROM (SELECT e.id, e.run_id, e.seq,
                    json_build_object('id', e.id, 'run_id', e.run_id, 'seq', e.seq, 'type', e.type,
                                      'task', e.task, 'agent', e.agent, 'data', e.data, 'at', e.at,
                                      'crew', r.crew_name)::text AS payload
               FROM new_events AS e JOIN runs AS r ON r.id = e.run_id
              ORDER BY e.id) AS envelope;
    RETURN NULL;
END
$$;

CREATE TRIGGER events_publish AFTER INSERT ON events REFERENCING NEW TABLE AS new_events
    FOR EACH STATEMENT EXECUTE FUNCTION agentd_publish_events();
