-- Publish every event after its transaction commits: NOTIFY is delivered at commit, in commit
-- order, so listeners never see an event that was not committed. The payload is the envelope
-- itself (no read-back needed); an envelope too large for a notification is sent as a reference
-- ({"id", "run_id", "seq", "ref": true}) that listeners read from the table.
CREATE FUNCTION agentd_publish_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    payload text;
BEGIN
    payload := json_build_object(
        'id', NEW.id, 'run_id', NEW.run_id, 'seq', NEW.seq, 'type', NEW.type, 'task', NEW.task,
        'agent', NEW.agent, 'data', NEW.data, 'at', NEW.at,
        'crew', (SELECT crew_name FROM runs WHERE id = NEW.run_id))::text;
    IF octet_length(payload) > 7900 THEN
        payload := json_build_object('id', NEW.id, 'run_id', NEW.run_id, 'seq', NEW.seq, 'ref', true)::text;
    END IF;
    PERFORM pg_notify('agentd_events', payload);
    RETURN NULL;
END
$$;

CREATE TRIGGER events_publish AFTER INSERT ON events FOR EACH ROW EXECUTE FUNCTION agentd_publish_event();
