-- The journal's high-volume tables (events, messages, tool_calls: about 20 rows per run) no longer
-- check their run_id against runs on every insert. Each check ran a lookup and took a key-share
-- lock on the run row, about a fifth of Postgres's CPU in the inflight benchmark, and it guarded
-- nothing the writers do not already: every statement that writes these rows either inserts the
-- run in the same transaction (a kickoff), or locks the run row first and writes only if it is
-- there (the journal's fence, a claim, `append_events_tx`'s `UPDATE runs ... RETURNING`). Runs
-- are never deleted by the service. Whoever deletes one by hand deletes its journal with it:
--   DELETE FROM events WHERE run_id = $1; DELETE FROM messages WHERE run_id = $1;
--   DELETE FROM tool_calls WHERE run_id = $1; DELETE FROM runs WHERE id = $1;  -- run_tasks cascade
ALTER TABLE events DROP CONSTRAINT IF EXISTS events_run_id_fkey;
ALTER TABLE messages DROP CONSTRAINT IF EXISTS messages_run_id_fkey;
ALTER TABLE tool_calls DROP CONSTRAINT IF EXISTS tool_calls_run_id_fkey;
