-- Memories: what crews remember across kickoffs, in a tenant's named scopes ("user:42"). A run
-- saves one item per completed task (and, with `extract`, the facts and entities a model found in
-- the answer) in the transaction that commits the task; clients seed, read and forget them
-- through /v1/memories. Items outlive the runs that saved them: a deleted run's memories stay
-- until their scope is forgotten.

CREATE TABLE memories (
    id         uuid PRIMARY KEY,
    tenant     text NOT NULL REFERENCES tenants (name),
    scope      text NOT NULL,
    -- `task` (a task's answer), `fact`, `entity` (extracted from an answer) or `note` (posted).
    kind       text NOT NULL CHECK (kind IN ('task', 'fact', 'entity', 'note')),
    text       text NOT NULL,
    -- The run, task and agent that saved it (NULL for a posted note).
    run_id     uuid,
    task       text,
    agent      text,
    created_at timestamptz NOT NULL DEFAULT now(),
    search     tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED
);
CREATE INDEX memories_scope ON memories (tenant, scope, created_at DESC);
CREATE INDEX memories_search ON memories USING gin (search);
CREATE INDEX memories_run ON memories (run_id) WHERE run_id IS NOT NULL;
