-- Seconds a run spent awaiting human input; its time limit does not count them.
ALTER TABLE runs ADD COLUMN paused_s double precision NOT NULL DEFAULT 0 CHECK (paused_s >= 0);
