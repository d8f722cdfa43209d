-- The engine's journal: a message may be a summary that replaces the earlier messages of its
-- conversation (but the system prompt) when the context window runs out. Everything else the
-- journal writes fits the initial schema, and each of its reads and writes is served by an
-- existing key: messages by (run_id, seq), tool calls by (run_id, id), tasks by (run_id, name)
-- and (run_id, position), the queue claim by runs_queued_idx.

ALTER TABLE messages ADD COLUMN compacts boolean NOT NULL DEFAULT false;
