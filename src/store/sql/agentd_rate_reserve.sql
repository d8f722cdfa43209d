-- The current definition of agentd_rate_reserve(), as migrations/20261202000016_spend.sql left it.
-- A migration that changes it also changes this file: the test
-- `the_sql_definitions_in_src_are_the_databases` (tests/e2e/store.rs) holds the two together.
--
-- Book the earliest start, not before `after` seconds from now, at which every key is free;
-- each key is then busy for its cost after that start. Returns the seconds to wait for it.
CREATE OR REPLACE FUNCTION agentd_rate_reserve(keys text[], costs float8[], after float8) RETURNS float8
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
