-- Quarantine: how many times the replica working on a run or a document died (its lease expired
-- while the work was under way: the process was killed, crashed or stopped renewing). A graceful
-- hand-back (shutdown, a lost database connection reported by the worker) is not a death. After
-- `quarantine_after_deaths` deaths the item is failed with a reason that says so and is never
-- handed to another replica: work that kills its process must not kill every replica in turn.
ALTER TABLE runs ADD COLUMN deaths integer NOT NULL DEFAULT 0 CHECK (deaths >= 0);
ALTER TABLE knowledge_documents ADD COLUMN deaths integer NOT NULL DEFAULT 0 CHECK (deaths >= 0);
