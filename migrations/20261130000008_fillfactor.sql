-- Leave room in every page of the tables whose rows are updated after they are written (a run's
-- row once per journal commit, its tasks and tool calls when they end), so that an update can put
-- the new row version beside the old one (a HOT update) instead of adding an entry to every index.
-- Applies to pages written from now on.
ALTER TABLE runs SET (fillfactor = 50);
ALTER TABLE run_tasks SET (fillfactor = 70);
ALTER TABLE tool_calls SET (fillfactor = 70);
