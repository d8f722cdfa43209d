-- The current definition of agentd_webhook_matches(), as migrations/20261201000015_webhooks.sql left it.
-- A migration that changes it also changes this file: the test
-- `the_sql_definitions_in_src_are_the_databases` (tests/e2e/store.rs) holds the two together.
--
-- Does an endpoint's event list (exact types, `prefix.*`, `*`) take this type?
CREATE OR REPLACE FUNCTION agentd_webhook_matches(patterns text[], event_type text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT EXISTS (SELECT 1 FROM unnest(patterns) AS p
                    WHERE p = '*' OR p = event_type
                       OR (right(p, 2) = '.*' AND starts_with(event_type, left(p, -1))))
$$;
