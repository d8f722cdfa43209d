-- Side records: what a task's start found (the hits of its knowledge bases, the memories its crew
-- recalled), journaled so a resumed run builds the same prompt without searching again. They were
-- tool-call rows (`<task>#knowledge` of tool 'knowledge', `<task>#recall` of tool 'memory', the
-- value as JSON in `result`); now they are typed rows of their own, one per task and kind. The
-- API still lists them among a run's tool calls, as before. Like the journal's other tables, no
-- foreign key to runs (migration 11): the journal's fence guards the writes and
-- agentd_remove_runs removes them with their run.
CREATE TABLE side_records (
    run_id     uuid NOT NULL,
    task       text NOT NULL,
    kind       text NOT NULL CHECK (kind IN ('knowledge', 'recall')),
    agent      text NOT NULL,
    -- What was asked: {"bases": [...]} or {"scope": "..."}.
    arguments  jsonb NOT NULL,
    -- What was found.
    value      jsonb NOT NULL,
    attempt    integer NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, task, kind)
);

WITH moved AS (
    DELETE FROM tool_calls
     WHERE status = 'succeeded'
       AND ((tool = 'knowledge' AND id = task || '#knowledge') OR (tool = 'memory' AND id = task || '#recall'))
    RETURNING run_id, task, tool, agent, arguments, result, attempt, started_at
)
INSERT INTO side_records (run_id, task, kind, agent, arguments, value, attempt, created_at)
SELECT run_id, task, CASE tool WHEN 'knowledge' THEN 'knowledge' ELSE 'recall' END, coalesce(agent, ''),
       arguments, coalesce(result, '[]')::jsonb, attempt, started_at
  FROM moved;

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
