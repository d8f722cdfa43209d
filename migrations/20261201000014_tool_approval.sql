-- Approval before a tool runs: a call of a tool that requires approval is journaled with
-- approval = {"state": "pending"} and waits; the reviewer's decision replaces it
-- ({"state": "approved", "arguments": ...} or {"state": "rejected", "reason": ...}). Calls of the
-- same round that need no decision wait with it ({"state": "deferred"}). NULL: no approval asked.
-- Adding a nullable column rewrites no rows.
ALTER TABLE tool_calls ADD COLUMN approval jsonb;
