-- How many times a run was interrupted (its worker died, lost its lease, or failed outside the
-- engine). `max_attempts` bounds these; `attempt` keeps counting every claim (it fences writes),
-- including the ones after a human review or a graceful handoff, which are not failures.
ALTER TABLE runs ADD COLUMN interruptions integer NOT NULL DEFAULT 0 CHECK (interruptions >= 0);
