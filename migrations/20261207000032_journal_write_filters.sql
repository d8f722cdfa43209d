-- agentd_journal_write() without the tests of every row against the array of held runs when every
-- step of the batch holds its run (the usual batch): `x = ANY(array parameter)` is a linear scan,
-- so a batch of n steps made n² comparisons in each part (a batch of 100 steps: 2 of a messages
-- insert's 4.5 ms), and its row-count checks count per step only when the totals differ
-- (docs/performance.md, issue 47). The same rows, the same refusals, the same signature.
INSERT INTO schema_window (version, oldest_schema, release, change)
VALUES (20261207000032, 20261205000027, '0.2.0',
        'additive: agentd_journal_write replaced (same signature and rows)');

CREATE OR REPLACE FUNCTION agentd_journal_write(
    steps uuid[], attempts integer[],
    want_starts integer[], want_records integer[], want_ends integer[], want_tasks integer[],
    m_run uuid[], m_attempt integer[], m_n int8[], m_conversation text[], m_task text[], m_agent text[],
    m_role text[], m_content text[], m_tool_calls jsonb[], m_tool_call_id text[], m_compacts boolean[],
    m_images jsonb[],
    s_run uuid[], s_attempt integer[], s_id text[], s_conversation text[], s_task text[], s_agent text[],
    s_tool text[], s_arguments jsonb[], s_status text[], s_result text[], s_error text[], s_cached boolean[],
    s_approval jsonb[],
    r_run uuid[], r_attempt integer[], r_kind text[], r_task text[], r_agent text[], r_arguments jsonb[],
    r_value jsonb[],
    e_run uuid[], e_id text[], e_status text[], e_result text[], e_error text[], e_cached boolean[],
    t_run uuid[], t_name text[], t_status text[], t_output jsonb[], t_error jsonb[],
    u_llm_calls int8[], u_prompt_tokens int8[], u_completion_tokens int8[], u_tool_calls int8[],
    u_status text[], u_output jsonb[], u_error jsonb[], u_events int8[], u_cached_tokens int8[],
    u_cost_usd float8[], u_estimated_tokens int8[],
    v_run uuid[], v_n int8[], v_type text[], v_task text[], v_agent text[], v_data jsonb[],
    g_run uuid[], g_task text[], g_agent text[], g_model text[], g_llm_calls int8[], g_prompt_tokens int8[],
    g_completion_tokens int8[], g_cached_tokens int8[], g_cost_usd float8[])
RETURNS uuid[]
LANGUAGE plpgsql AS $$
-- A batch of journal steps (at most one per run, `steps`), each part's rows as arrays: see
-- src/store/run_journal/write.rs, which builds them, for what each part means. Fenced first: a
-- step is written only when its attempt still holds its run (it exists, no later claim took it,
-- it is neither finished nor back in a queue); the runs so held are the answer. A part that
-- touches another number of rows for a held step than `want_*` says refuses the batch with
-- SQLSTATE AJ001, the step's 1-based position in DETAIL, and its reason as the message.
DECLARE
    held uuid[];
    -- Every step holds its run (the usual batch): the parts' rows need not be tested against
    -- `held` (`= ANY` of an array parameter is a linear scan: n² comparisons for n steps), and a
    -- part's row-count check needs only its total: a held step's rows write one row each at
    -- most, so a step that wrote fewer than its `want_*` shows in the total, and is then looked for.
    everyone boolean;
    written uuid[];
    refused bigint;
BEGIN
    -- Locked in id order, as every grouped writer does, so two batches never deadlock.
    PERFORM 1 FROM runs WHERE id = ANY(steps) ORDER BY id FOR UPDATE;
    SELECT coalesce(array_agg(r.id), '{}') INTO held
      FROM runs AS r JOIN UNNEST(steps, attempts) AS s(id, attempt) ON s.id = r.id AND s.attempt = r.attempt
     WHERE r.id = ANY(steps) AND r.status NOT IN ('completed', 'failed', 'cancelled', 'queued', 'waiting');
    IF cardinality(held) = 0 THEN
        RETURN held;
    END IF;
    everyone := cardinality(held) = cardinality(steps);

    -- Messages, after each run's last one (`seq` stays dense: the runs are locked).
    IF cardinality(m_run) > 0 THEN
        INSERT INTO messages (run_id, seq, conversation, task, agent, role, content, tool_calls, tool_call_id,
                              compacts, images, attempt)
        SELECT m.run_id, last.seq + m.n, m.conversation, m.task, m.agent, m.role, m.content, m.tool_calls,
               m.tool_call_id, m.compacts, m.images, m.attempt
          FROM UNNEST(m_run, m_attempt, m_n, m_conversation, m_task, m_agent, m_role, m_content, m_tool_calls,
                      m_tool_call_id, m_compacts, m_images)
               AS m(run_id, attempt, n, conversation, task, agent, role, content, tool_calls, tool_call_id,
                    compacts, images)
               CROSS JOIN LATERAL (SELECT coalesce(max(x.seq), 0) AS seq FROM messages AS x
                                    WHERE x.run_id = m.run_id) AS last
         WHERE (everyone OR m.run_id = ANY(held));
    END IF;

    -- Tool calls started (those also ended in their step go in finished); a running call of an
    -- earlier attempt is taken over, a finished one refuses the step.
    IF cardinality(s_run) > 0 THEN
        WITH w AS (
            INSERT INTO tool_calls AS t (run_id, id, conversation, task, agent, tool, arguments, attempt,
                                         status, result, error, cached, finished_at, approval)
            SELECT c.run_id, c.id, c.conversation, c.task, c.agent, c.tool, c.arguments, c.attempt,
                   c.status, c.result, c.error, c.cached, CASE WHEN c.status <> 'running' THEN now() END,
                   c.approval
              FROM UNNEST(s_run, s_attempt, s_id, s_conversation, s_task, s_agent, s_tool, s_arguments,
                          s_status, s_result, s_error, s_cached, s_approval)
                   AS c(run_id, attempt, id, conversation, task, agent, tool, arguments, status, result, error,
                        cached, approval)
             WHERE (everyone OR c.run_id = ANY(held))
            ON CONFLICT (run_id, id) DO UPDATE
               SET conversation = EXCLUDED.conversation, task = EXCLUDED.task, agent = EXCLUDED.agent,
                   tool = EXCLUDED.tool, arguments = EXCLUDED.arguments, attempt = EXCLUDED.attempt,
                   started_at = now(), status = EXCLUDED.status, result = EXCLUDED.result,
                   error = EXCLUDED.error, cached = EXCLUDED.cached, finished_at = EXCLUDED.finished_at,
                   approval = EXCLUDED.approval
             WHERE t.status = 'running'
            RETURNING t.run_id)
        SELECT coalesce(array_agg(w.run_id), '{}') INTO written FROM w;
        IF cardinality(written) <> (SELECT coalesce(sum(s.n), 0) FROM UNNEST(steps, want_starts) AS s(id, n)
                                     WHERE everyone OR s.id = ANY(held)) THEN
            SELECT min(s.i) INTO refused FROM UNNEST(steps, want_starts) WITH ORDINALITY AS s(id, n, i)
             WHERE s.id = ANY(held) AND s.n <> (SELECT count(*) FROM UNNEST(written) AS w(id) WHERE w.id = s.id);
        END IF;
        IF refused IS NOT NULL THEN
            RAISE EXCEPTION USING ERRCODE = 'AJ001', DETAIL = refused,
                  MESSAGE = 'a tool call id of this step belongs to a finished call';
        END IF;
    END IF;

    -- Side records: a task's record of a kind is written once.
    IF cardinality(r_run) > 0 THEN
        WITH w AS (
            INSERT INTO side_records (run_id, attempt, kind, task, agent, arguments, value)
            SELECT * FROM UNNEST(r_run, r_attempt, r_kind, r_task, r_agent, r_arguments, r_value)
                          AS r(run_id, attempt, kind, task, agent, arguments, value)
             WHERE (everyone OR r.run_id = ANY(held))
            ON CONFLICT (run_id, task, kind) DO NOTHING
            RETURNING run_id)
        SELECT coalesce(array_agg(w.run_id), '{}') INTO written FROM w;
        IF cardinality(written) <> (SELECT coalesce(sum(s.n), 0) FROM UNNEST(steps, want_records) AS s(id, n)
                                     WHERE everyone OR s.id = ANY(held)) THEN
            SELECT min(s.i) INTO refused FROM UNNEST(steps, want_records) WITH ORDINALITY AS s(id, n, i)
             WHERE s.id = ANY(held) AND s.n <> (SELECT count(*) FROM UNNEST(written) AS w(id) WHERE w.id = s.id);
        END IF;
        IF refused IS NOT NULL THEN
            RAISE EXCEPTION USING ERRCODE = 'AJ001', DETAIL = refused,
                  MESSAGE = 'a side record of this step was written before';
        END IF;
    END IF;

    -- Tool calls of earlier steps ended.
    IF cardinality(e_run) > 0 THEN
        WITH w AS (
            UPDATE tool_calls AS t
               SET status = e.status, result = e.result, error = e.error, cached = e.cached, finished_at = now()
              FROM UNNEST(e_run, e_id, e_status, e_result, e_error, e_cached)
                   AS e(run_id, id, status, result, error, cached)
             WHERE t.run_id = e.run_id AND t.id = e.id AND (everyone OR t.run_id = ANY(held))
            RETURNING t.run_id)
        SELECT coalesce(array_agg(w.run_id), '{}') INTO written FROM w;
        IF cardinality(written) <> (SELECT coalesce(sum(s.n), 0) FROM UNNEST(steps, want_ends) AS s(id, n)
                                     WHERE everyone OR s.id = ANY(held)) THEN
            SELECT min(s.i) INTO refused FROM UNNEST(steps, want_ends) WITH ORDINALITY AS s(id, n, i)
             WHERE s.id = ANY(held) AND s.n <> (SELECT count(*) FROM UNNEST(written) AS w(id) WHERE w.id = s.id);
        END IF;
        IF refused IS NOT NULL THEN
            RAISE EXCEPTION USING ERRCODE = 'AJ001', DETAIL = refused,
                  MESSAGE = 'a tool call of this step never started';
        END IF;
    END IF;

    -- Task changes (folded per task of a step): `started_at` on a task's first change,
    -- `finished_at` when it completes or fails (cleared should it start again).
    IF cardinality(t_run) > 0 THEN
        WITH w AS (
            UPDATE run_tasks AS t
               SET status = c.status,
                   output = coalesce(c.output, t.output),
                   error = c.error,
                   started_at = coalesce(t.started_at, now()),
                   finished_at = CASE WHEN c.status = 'running' THEN NULL ELSE now() END
              FROM UNNEST(t_run, t_name, t_status, t_output, t_error) AS c(run_id, name, status, output, error)
             WHERE t.run_id = c.run_id AND t.name = c.name AND (everyone OR t.run_id = ANY(held))
            RETURNING t.run_id)
        SELECT coalesce(array_agg(w.run_id), '{}') INTO written FROM w;
        IF cardinality(written) <> (SELECT coalesce(sum(s.n), 0) FROM UNNEST(steps, want_tasks) AS s(id, n)
                                     WHERE everyone OR s.id = ANY(held)) THEN
            SELECT min(s.i) INTO refused FROM UNNEST(steps, want_tasks) WITH ORDINALITY AS s(id, n, i)
             WHERE s.id = ANY(held) AND s.n <> (SELECT count(*) FROM UNNEST(written) AS w(id) WHERE w.id = s.id);
        END IF;
        IF refused IS NOT NULL THEN
            RAISE EXCEPTION USING ERRCODE = 'AJ001', DETAIL = refused,
                  MESSAGE = 'a task of this step is not one of the run''s';
        END IF;
    END IF;

    -- Per run: the usage (and its split by task, agent and model; the daily ledger of a tenant
    -- with a daily cap), its end (releasing its lease) when it ends, and its events in order after
    -- its last one, their `seq`s taken from the run's `last_seq` counter.
    WITH changed AS (
        UPDATE runs AS r
           SET llm_calls = r.llm_calls + u.llm_calls, prompt_tokens = r.prompt_tokens + u.prompt_tokens,
               completion_tokens = r.completion_tokens + u.completion_tokens,
               tool_calls = r.tool_calls + u.tool_calls,
               cached_tokens = r.cached_tokens + u.cached_tokens, cost_usd = r.cost_usd + u.cost_usd,
               estimated_tokens = r.estimated_tokens + u.estimated_tokens,
               -- A cancellation requested meanwhile wins over a pause for human input.
               status = CASE WHEN r.status = 'cancelling' AND u.status = 'awaiting_input' THEN r.status
                             ELSE coalesce(u.status, r.status) END,
               output = coalesce(u.output, r.output),
               error = coalesce(u.error, r.error),
               finished_at = CASE WHEN u.status IN ('completed', 'failed', 'cancelled') THEN now()
                                  ELSE r.finished_at END,
               lease_owner = CASE WHEN u.status IS NULL
                                       OR (r.status = 'cancelling' AND u.status = 'awaiting_input')
                                  THEN r.lease_owner END,
               lease_expires_at = CASE WHEN u.status IS NULL
                                            OR (r.status = 'cancelling' AND u.status = 'awaiting_input')
                                       THEN r.lease_expires_at END,
               last_seq = r.last_seq + u.events,
               updated_at = now()
          FROM UNNEST(steps, u_llm_calls, u_prompt_tokens, u_completion_tokens, u_tool_calls, u_status, u_output,
                      u_error, u_events, u_cached_tokens, u_cost_usd, u_estimated_tokens)
               AS u(id, llm_calls, prompt_tokens, completion_tokens, tool_calls, status, output, error,
                    events, cached_tokens, cost_usd, estimated_tokens)
         WHERE r.id = u.id AND r.id = ANY(held)
        RETURNING r.id, r.last_seq - u.events AS base, r.tenant,
                  u.prompt_tokens + u.completion_tokens AS tokens, u.cost_usd AS cost
    ),
    ledger AS (
        INSERT INTO tenant_spend AS s (tenant, day, tokens, cost_usd)
        SELECT c.tenant, (now() AT TIME ZONE 'UTC')::date, sum(c.tokens)::int8, sum(c.cost)
          FROM changed AS c JOIN tenants AS t ON t.name = c.tenant
         WHERE (c.tokens > 0 OR c.cost > 0)
           AND (t.max_tokens_per_day IS NOT NULL OR t.max_cost_usd_per_day IS NOT NULL)
         GROUP BY c.tenant
        ON CONFLICT (tenant, day) DO UPDATE
           SET tokens = s.tokens + excluded.tokens, cost_usd = s.cost_usd + excluded.cost_usd
    ),
    spent AS (
        INSERT INTO run_usage AS s (run_id, task, agent, model, llm_calls, prompt_tokens, completion_tokens,
                                    cached_tokens, cost_usd)
        SELECT * FROM UNNEST(g_run, g_task, g_agent, g_model, g_llm_calls, g_prompt_tokens, g_completion_tokens,
                             g_cached_tokens, g_cost_usd)
                      AS g(run_id, task, agent, model, llm_calls, prompt_tokens, completion_tokens,
                           cached_tokens, cost_usd)
         WHERE (everyone OR g.run_id = ANY(held))
        ON CONFLICT (run_id, task, agent, model) DO UPDATE
           SET llm_calls = s.llm_calls + excluded.llm_calls,
               prompt_tokens = s.prompt_tokens + excluded.prompt_tokens,
               completion_tokens = s.completion_tokens + excluded.completion_tokens,
               cached_tokens = s.cached_tokens + excluded.cached_tokens,
               cost_usd = s.cost_usd + excluded.cost_usd
    )
    INSERT INTO events (run_id, seq, type, task, agent, data)
    SELECT e.run_id, changed.base + e.n, e.type, e.task, e.agent, e.data
      FROM UNNEST(v_run, v_n, v_type, v_task, v_agent, v_data)
           WITH ORDINALITY AS e(run_id, n, type, task, agent, data, position)
           JOIN changed ON changed.id = e.run_id
     ORDER BY e.position;

    RETURN held;
END
$$;
