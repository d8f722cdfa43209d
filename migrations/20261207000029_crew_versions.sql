-- Crew versions and aliases (docs/guides/versions-and-evaluations.md).
--
-- Every store of a crew whose spec differs from its newest version's makes a new, immutable
-- version, numbered from 1 per crew, with its content hash and who stored it. The trigger below
-- makes them, so a store by any release makes one: release 0.1.0's upsert of `crews` included
-- (it leaves `stored_by` NULL). `crews` keeps the newest spec, as before.
--
-- An alias names a version of its crew and moves by one UPDATE. A kickoff names a crew as
-- `name` (its `production` alias when it has one, else its newest version), `name@<version>`,
-- `name@latest` or `name@<alias>`; the run records the version it ran (`runs.crew_version`, NULL
-- for a crew given inline or a run of a release before this one).
INSERT INTO schema_window (version, oldest_schema, release, change)
VALUES (20261207000029, 20261205000027, '0.2.0',
        'additive: crew_versions, crew_aliases (made by a trigger on crews, for every release''s stores) and runs.crew_version');

CREATE TABLE crew_versions (
    tenant       text NOT NULL,
    crew         text NOT NULL,
    version      integer NOT NULL CHECK (version >= 1),
    spec         jsonb NOT NULL,
    -- sha256 of the spec's canonical JSON (jsonb's text form), hex.
    content_hash text NOT NULL,
    -- The key that stored it (its id), 'operator' (AGENTD_API_KEYS or an open API), or NULL.
    stored_by    text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, crew, version),
    FOREIGN KEY (tenant, crew) REFERENCES crews (tenant, name) ON DELETE CASCADE
);

CREATE TABLE crew_aliases (
    tenant     text NOT NULL,
    crew       text NOT NULL,
    alias      text NOT NULL CHECK (length(alias) BETWEEN 1 AND 100),
    version    integer NOT NULL,
    updated_by text,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, crew, alias),
    FOREIGN KEY (tenant, crew, version) REFERENCES crew_versions (tenant, crew, version) ON DELETE CASCADE
);

ALTER TABLE runs ADD COLUMN crew_version integer;

-- After a crew's row is written: a new version when its spec is not its newest version's. The
-- row's lock (the upsert's) orders concurrent stores of one crew, so numbers never collide.
CREATE FUNCTION agentd_version_crew() RETURNS trigger LANGUAGE plpgsql AS $$
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

CREATE TRIGGER crews_version AFTER INSERT OR UPDATE OF spec ON crews
    FOR EACH ROW EXECUTE FUNCTION agentd_version_crew();

-- The crews stored before: each is its version 1.
INSERT INTO crew_versions (tenant, crew, version, spec, content_hash, stored_by, created_at)
SELECT tenant, name, 1, spec, encode(sha256(convert_to(spec::text, 'UTF8')), 'hex'), NULL, updated_at
  FROM crews;
