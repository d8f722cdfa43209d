-- The current definition of agentd_knowledge_notify(), as migrations/20261203000020_knowledge.sql left it.
-- A migration that changes it also changes this file: the test
-- `the_sql_definitions_in_src_are_the_databases` (tests/e2e/store.rs) holds the two together.
--
-- A posted document wakes the ingesters of every replica.
CREATE OR REPLACE FUNCTION agentd_knowledge_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('agentd_knowledge', '');
    RETURN NULL;
END $$;

-- trigger: CREATE TRIGGER knowledge_documents_notify AFTER INSERT ON public.knowledge_documents FOR EACH STATEMENT EXECUTE FUNCTION agentd_knowledge_notify()
