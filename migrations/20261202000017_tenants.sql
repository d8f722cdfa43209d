-- Tenants and API keys. A tenant owns runs (and through them their tasks, messages, tool calls,
-- events, approvals and spend), registered crews, secrets, webhook endpoints (and their
-- deliveries) and idempotency keys. Everything that existed before belongs to `default`; its
-- clients keep working with the keys of AGENTD_API_KEYS, which are admin keys of `default`.
-- Keys and indexes lead with the tenant where the queries filter by it (the layout a
-- distribution by tenant would need; see docs/operations.md).
CREATE TABLE tenants (
    name       text PRIMARY KEY CHECK (name ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
    created_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO tenants (name) VALUES ('default');

-- A key is stored as the SHA-256 digest of its text only; `prefix` (its first characters, not
-- secret) finds the row and tells keys apart in lists.
CREATE TABLE api_keys (
    id           uuid PRIMARY KEY,
    tenant       text NOT NULL REFERENCES tenants (name),
    name         text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    prefix       text NOT NULL,
    digest       bytea NOT NULL UNIQUE,
    scopes       text[] NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    expires_at   timestamptz,
    revoked_at   timestamptz
);
CREATE INDEX api_keys_prefix ON api_keys (prefix) WHERE revoked_at IS NULL;
CREATE INDEX api_keys_tenant ON api_keys (tenant, created_at);

-- The owner of each resource. Adding a column with a constant default rewrites no table. Runs
-- and idempotency keys are written at the kickoff rate: they carry no foreign key, whose check
-- would share-lock the tenant's row from every kickoff at once (a caller's tenant comes from its
-- key, which does reference the tenant).
ALTER TABLE runs ADD COLUMN tenant text NOT NULL DEFAULT 'default';
CREATE INDEX runs_tenant ON runs (tenant, id DESC);

ALTER TABLE crews ADD COLUMN tenant text NOT NULL DEFAULT 'default' REFERENCES tenants (name);
ALTER TABLE crews DROP CONSTRAINT crews_pkey, ADD PRIMARY KEY (tenant, name);

ALTER TABLE secrets ADD COLUMN tenant text NOT NULL DEFAULT 'default' REFERENCES tenants (name);
ALTER TABLE secrets DROP CONSTRAINT secrets_pkey, ADD PRIMARY KEY (tenant, name);

ALTER TABLE idempotency_keys ADD COLUMN tenant text NOT NULL DEFAULT 'default';
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey, ADD PRIMARY KEY (tenant, key);

ALTER TABLE webhook_endpoints ADD COLUMN tenant text NOT NULL DEFAULT 'default' REFERENCES tenants (name);
CREATE INDEX webhook_endpoints_tenant ON webhook_endpoints (tenant, created_at);

-- A registered endpoint receives the events of its own tenant's runs only.
CREATE OR REPLACE FUNCTION agentd_enqueue_webhooks() RETURNS trigger LANGUAGE plpgsql AS $$
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
                  JOIN runs AS r ON r.id = n.run_id
                  JOIN webhook_endpoints AS w ON w.run_id IS NULL AND w.tenant = r.tenant
                 WHERE agentd_webhook_matches(w.events, n.type)
                   AND (w.crew IS NULL OR w.crew = r.crew_name)
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
