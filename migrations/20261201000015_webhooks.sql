-- Webhooks: endpoints that receive a run's events, and the durable outbox that delivers them.
--
-- An endpoint is registered (`run_id` NULL: every run, optionally one crew's) or belongs to one
-- run (a kickoff's `webhooks`). Its signing secret is never stored: it is derived from the
-- server's AGENTD_WEBHOOK_SECRET and the endpoint's random `salt` (a kickoff's endpoints are signed
-- with the server secret itself, `salt` NULL); a rotation keeps the previous salt until
-- `previous_until`, so both secrets sign meanwhile.
CREATE TABLE webhook_endpoints (
    id             uuid PRIMARY KEY,
    url            text NOT NULL,
    events         text[] NOT NULL,
    crew           text,
    run_id         uuid REFERENCES runs (id) ON DELETE CASCADE,
    description    text NOT NULL DEFAULT '',
    enabled        boolean NOT NULL DEFAULT true,
    disabled_reason text,
    salt           bytea,
    previous_salt  bytea,
    previous_until timestamptz,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX webhook_endpoints_run ON webhook_endpoints (run_id) WHERE run_id IS NOT NULL;
CREATE INDEX webhook_endpoints_registered ON webhook_endpoints (created_at) WHERE run_id IS NULL;

-- One delivery per committed event and matching endpoint, written by the trigger below in the
-- event's own transaction: it exists if and only if its event committed. A disabled endpoint's
-- deliveries are kept (not sent) until it is enabled again.
CREATE TABLE webhook_deliveries (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    endpoint_id     uuid NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    run_id          uuid NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq             bigint NOT NULL,
    event_id        bigint NOT NULL,
    status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_attempt_at timestamptz,
    last_status     integer,
    last_error      text,
    delivered_at    timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (endpoint_id, run_id, seq)
);

CREATE INDEX webhook_deliveries_recent ON webhook_deliveries (endpoint_id, id DESC);
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (created_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_run ON webhook_deliveries (run_id);

-- The work: one row per endpoint and run with deliveries pending (`pending` counts them). A
-- replica leases a queue and delivers its deliveries in `seq` order, so one run's events reach
-- one endpoint in order while other runs' queues go on; a failed attempt puts the whole queue off
-- until `next_attempt_at`. The trigger takes the row's lock to count a new delivery, so a queue
-- is removed (at zero) only when no delivery is on its way into it.
CREATE TABLE webhook_queues (
    endpoint_id     uuid NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    run_id          uuid NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    pending         integer NOT NULL CHECK (pending >= 0),
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    lease_until     timestamptz,
    PRIMARY KEY (endpoint_id, run_id)
);

CREATE INDEX webhook_queues_due ON webhook_queues (next_attempt_at);
CREATE INDEX webhook_queues_run ON webhook_queues (run_id);

-- Does an endpoint's event list (exact types, `prefix.*`, `*`) take this type?
CREATE FUNCTION agentd_webhook_matches(patterns text[], event_type text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT EXISTS (SELECT 1 FROM unnest(patterns) AS p
                    WHERE p = '*' OR p = event_type
                       OR (right(p, 2) = '.*' AND starts_with(event_type, left(p, -1))))
$$;

-- Write the deliveries of a statement's events, count them in their queues and wake the
-- deliverers. With no endpoint at all this is one probe per statement; a run
-- nobody subscribes to costs the probe of its id in the run index and a scan of the (few)
-- registered endpoints.
CREATE FUNCTION agentd_enqueue_webhooks() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    queued integer;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM webhook_endpoints) THEN
        RETURN NULL;
    END IF;
    WITH matched AS (
        INSERT INTO webhook_deliveries (endpoint_id, run_id, seq, event_id)
        SELECT endpoint_id, run_id, seq, event_id
          FROM (SELECT w.id AS endpoint_id, n.run_id, n.seq, n.id AS event_id
                  FROM new_events AS n
                  JOIN webhook_endpoints AS w ON w.run_id = n.run_id
                 WHERE agentd_webhook_matches(w.events, n.type)
                UNION ALL
                SELECT w.id, n.run_id, n.seq, n.id
                  FROM new_events AS n
                  JOIN webhook_endpoints AS w ON w.run_id IS NULL
                 WHERE agentd_webhook_matches(w.events, n.type)
                   AND (w.crew IS NULL OR w.crew = (SELECT crew_name FROM runs WHERE runs.id = n.run_id))
               ) AS m
        ORDER BY endpoint_id, run_id, seq
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

CREATE TRIGGER events_webhooks AFTER INSERT ON events REFERENCING NEW TABLE AS new_events
    FOR EACH STATEMENT EXECUTE FUNCTION agentd_enqueue_webhooks();
