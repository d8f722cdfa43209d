-- Spend: what runs cost, their usage split per task, agent and model, and the providers'
-- request and token budgets, one schedule per key shared by every replica.

ALTER TABLE runs
    ADD COLUMN cached_tokens int8 NOT NULL DEFAULT 0,
    ADD COLUMN cost_usd float8 NOT NULL DEFAULT 0;

-- A run's model calls by task, agent and model (`provider/model`). Written with the journal's
-- commits; like the journal's tables it holds no foreign key to runs (see migration 11): the
-- retention pruner and DELETE /v1/runs/{id} clear it.
CREATE TABLE run_usage (
    run_id uuid NOT NULL,
    task text NOT NULL,
    agent text NOT NULL,
    model text NOT NULL,
    llm_calls int8 NOT NULL DEFAULT 0,
    prompt_tokens int8 NOT NULL DEFAULT 0,
    completion_tokens int8 NOT NULL DEFAULT 0,
    cached_tokens int8 NOT NULL DEFAULT 0,
    cost_usd float8 NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, task, agent, model)
);

-- GCRA schedules: for each key (`provider:<name>:rpm`, `provider:<name>:tpm`), the earliest
-- time the next call may start. A call books its cost (60 s / rpm; tokens × 60 s / tpm) after
-- its start; a 429 pushes the time back; a token estimate is corrected after the call.
CREATE TABLE rate_schedules (
    key text PRIMARY KEY,
    next_at timestamptz NOT NULL
);

-- Book the earliest start, not before `after` seconds from now, at which every key is free;
-- each key is then busy for its cost after that start. Returns the seconds to wait for it.
CREATE FUNCTION agentd_rate_reserve(keys text[], costs float8[], after float8) RETURNS float8
LANGUAGE plpgsql AS $$
DECLARE
    earliest timestamptz := clock_timestamp() + make_interval(secs => after);
    start timestamptz;
BEGIN
    INSERT INTO rate_schedules (key, next_at)
    SELECT k, '-infinity' FROM unnest(keys) AS k ORDER BY k
    ON CONFLICT (key) DO NOTHING;
    -- In key order, as every booking locks them, so two bookings never deadlock.
    PERFORM 1 FROM rate_schedules WHERE key = ANY(keys) ORDER BY key FOR UPDATE;
    SELECT greatest(max(next_at), earliest) INTO start FROM rate_schedules WHERE key = ANY(keys);
    UPDATE rate_schedules AS s SET next_at = start + make_interval(secs => c.cost)
      FROM unnest(keys, costs) AS c(key, cost)
     WHERE s.key = c.key;
    RETURN greatest(extract(epoch FROM start - clock_timestamp()), 0);
END $$;
