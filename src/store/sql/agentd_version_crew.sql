-- The current definition of agentd_version_crew(), as migrations/20261207000029_crew_versions.sql left it.
-- A migration that changes it also changes this file: the test
-- `the_sql_definitions_in_src_are_the_databases` (tests/e2e/store.rs) holds the two together.
--
-- After a crew's row is written: a new version when its spec is not its newest version's. The
-- row's lock (the upsert's) orders concurrent stores of one crew, so numbers never collide.
CREATE OR REPLACE FUNCTION agentd_version_crew() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    hash text := encode(sha256(convert_to(NEW.spec::text, 'UTF8')), 'hex');
    newest record;
BEGIN
    SELECT v.version, v.content_hash INTO newest
      FROM crew_versions AS v
     WHERE v.tenant = NEW.tenant AND v.crew = NEW.name
     ORDER BY v.version DESC LIMIT 1;
    IF newest.version IS NOT NULL AND newest.content_hash = hash THEN
        RETURN NULL;
    END IF;
    INSERT INTO crew_versions (tenant, crew, version, spec, content_hash, stored_by)
    VALUES (NEW.tenant, NEW.name, COALESCE(newest.version, 0) + 1, NEW.spec, hash,
            NULLIF(current_setting('agentd.actor', true), ''));
    RETURN NULL;
END
$$;

-- trigger: CREATE TRIGGER crews_version AFTER INSERT OR UPDATE OF spec ON public.crews FOR EACH ROW EXECUTE FUNCTION agentd_version_crew()
