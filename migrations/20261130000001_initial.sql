-- The initial schema: runs (the queue), their tasks, the journal (messages and tool calls), the
-- event log, registered crews and idempotency keys.

CREATE TABLE runs (
    id                uuid PRIMARY KEY,
    status            text NOT NULL DEFAULT 'queued' CHECK (status IN
                        ('queued', 'running', 'awaiting_input', 'completed', 'failed', 'cancelling', 'cancelled')),
    crew_name         text NOT NULL,
    crew_spec         jsonb NOT NULL,
    inputs            jsonb NOT NULL DEFAULT '{}',
    metadata          jsonb NOT NULL DEFAULT '{}',
    -- Claims so far; every write a worker makes carries it (fencing).
    attempt           integer NOT NULL DEFAULT 0 CHECK (attempt >= 0),
    max_attempts      integer NOT NULL DEFAULT 3 CHECK (max_attempts >= 1),
    lease_owner       text,
    lease_expires_at  timestamptz,
    timeout_s         integer CHECK (timeout_s > 0),
    output            jsonb,
    error             jsonb,
    llm_calls         bigint NOT NULL DEFAULT 0,
    prompt_tokens     bigint NOT NULL DEFAULT 0,
    completion_tokens bigint NOT NULL DEFAULT 0,
    tool_calls        bigint NOT NULL DEFAULT 0,
    -- The seq of the run's newest event; the next event takes last_seq + 1 (dense per run).
    last_seq          bigint NOT NULL DEFAULT 0,
    created_at        timestamptz NOT NULL DEFAULT now(),
    started_at        timestamptz,
    finished_at       timestamptz,
    updated_at        timestamptz NOT NULL DEFAULT now()
);

-- The queue claim: oldest queued run first.
CREATE INDEX runs_queued_idx ON runs (created_at, id) WHERE status = 'queued';
-- Recovery: leases that have expired.
CREATE INDEX runs_lease_idx ON runs (lease_expires_at) WHERE status IN ('running', 'cancelling');
-- Listing newest first, filtered by status (unfiltered listing walks the primary key: ids are v7).
CREATE INDEX runs_status_id_idx ON runs (status, id DESC);

CREATE TABLE run_tasks (
    run_id      uuid NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    position    integer NOT NULL CHECK (position >= 0),
    name        text NOT NULL,
    agent       text,
    status      text NOT NULL DEFAULT 'pending' CHECK (status IN
                  ('pending', 'running', 'completed', 'failed', 'cancelled')),
    output      jsonb,
    error       jsonb,
    started_at  timestamptz,
    finished_at timestamptz,
    PRIMARY KEY (run_id, position),
    UNIQUE (run_id, name)
);

-- The conversation journal: every message of every task, in order.
CREATE TABLE messages (
    run_id       uuid NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq          bigint NOT NULL CHECK (seq >= 1),
    task         text,
    agent        text,
    role         text NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
    content      text,
    tool_calls   jsonb,
    tool_call_id text,
    attempt      integer NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, seq)
);

-- The tool-call journal: a row is written `running` before the tool runs and finished after.
CREATE TABLE tool_calls (
    run_id      uuid NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    id          text NOT NULL,
    task        text,
    agent       text,
    tool        text NOT NULL,
    arguments   jsonb NOT NULL,
    status      text NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'succeeded', 'failed')),
    result      text,
    error       text,
    cached      boolean NOT NULL DEFAULT false,
    attempt     integer NOT NULL,
    started_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    PRIMARY KEY (run_id, id)
);

-- The event log: a global id (firehose order) and a dense per-run seq.
CREATE TABLE events (
    id     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id uuid NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq    bigint NOT NULL CHECK (seq >= 1),
    type   text NOT NULL,
    task   text,
    agent  text,
    data   jsonb NOT NULL DEFAULT '{}',
    at     timestamptz NOT NULL DEFAULT now(),
    UNIQUE (run_id, seq)
);

CREATE TABLE crews (
    name       text PRIMARY KEY,
    spec       jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- Idempotency keys: a key maps to the fingerprint of the request that used it and the runs it made.
CREATE TABLE idempotency_keys (
    key          text PRIMARY KEY CHECK (length(key) BETWEEN 1 AND 255),
    scope        text NOT NULL,
    request_hash bytea NOT NULL,
    run_ids      uuid[] NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);
