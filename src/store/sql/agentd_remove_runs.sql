-- The current definition of agentd_remove_runs(), as migrations/20261205000027_side_records.sql left it.
-- A migration that changes it also changes this file: the test
-- `the_sql_definitions_in_src_are_the_databases` (tests/e2e/store.rs) holds the two together.
--
-- Remove runs with their journals (the journal's tables hold no foreign key to runs; see
-- migration 11) and their idempotency keys; the rows removed in all. Retention, DELETE
-- /v1/runs/{id}, DELETE /v1/threads/{id} and a rolled-back run use it. (Migration 25's, with the
-- side records.)
CREATE OR REPLACE FUNCTION agentd_remove_runs(ids uuid[]) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    removed bigint := 0;
    n bigint;
BEGIN
    IF cardinality(ids) = 0 THEN
        RETURN 0;
    END IF;
    DELETE FROM events WHERE run_id = ANY (ids);
    GET DIAGNOSTICS n = ROW_COUNT; removed := removed + n;
    DELETE FROM messages WHERE run_id = ANY (ids);
    GET DIAGNOSTICS n = ROW_COUNT; removed := removed + n;
    DELETE FROM tool_calls WHERE run_id = ANY (ids);
    GET DIAGNOSTICS n = ROW_COUNT; removed := removed + n;
    DELETE FROM side_records WHERE run_id = ANY (ids);
    GET DIAGNOSTICS n = ROW_COUNT; removed := removed + n;
    DELETE FROM run_usage WHERE run_id = ANY (ids);
    GET DIAGNOSTICS n = ROW_COUNT; removed := removed + n;
    DELETE FROM run_tasks WHERE run_id = ANY (ids);
    GET DIAGNOSTICS n = ROW_COUNT; removed := removed + n;
    -- A key names the runs it created (several for a batch); it goes with any of them.
    DELETE FROM idempotency_keys WHERE run_ids && ids;
    GET DIAGNOSTICS n = ROW_COUNT; removed := removed + n;
    DELETE FROM runs WHERE id = ANY (ids);
    GET DIAGNOSTICS n = ROW_COUNT; removed := removed + n;
    RETURN removed;
END
$$;
