-- Knowledge bases: a tenant's named collections of documents, split into chunks that crews
-- retrieve by full-text search (and by vector similarity where the database has pgvector: that
-- table is made at start-up, not here, so that a database without the extension migrates too;
-- see src/store/knowledge.rs).

CREATE TABLE knowledge_bases (
    id          uuid PRIMARY KEY,
    tenant      text NOT NULL REFERENCES tenants (name),
    name        text NOT NULL,
    description text NOT NULL DEFAULT '',
    -- `<provider>/<model>` of the embedding model; NULL: full-text search only.
    embedding   text,
    max_tokens  int4 NOT NULL CHECK (max_tokens BETWEEN 16 AND 8192),
    overlap     int4 NOT NULL CHECK (overlap >= 0 AND overlap < max_tokens),
    created_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant, name)
);

-- A document is ingested by a durable job: `pending` rows are leased by a replica's ingester
-- (`lease_until`, fenced by `attempts`), and become `ready` in the one transaction that writes
-- their chunks, or `failed` with the reason. Search reads only chunks of `ready` documents.
CREATE TABLE knowledge_documents (
    id          uuid PRIMARY KEY,
    base_id     uuid NOT NULL REFERENCES knowledge_bases (id) ON DELETE CASCADE,
    tenant      text NOT NULL,
    title       text NOT NULL,
    -- The client named it; otherwise the content's own title (an HTML `<title>`, a first `# `
    -- heading) replaces the file name or URL at ingestion.
    title_given boolean NOT NULL DEFAULT false,
    -- `text`, `url` or `upload`.
    source      text NOT NULL CHECK (source IN ('text', 'url', 'upload')),
    url         text,
    media_type  text NOT NULL,
    -- SHA-256 of the content as posted (of the URL for a URL): the same content again is the
    -- same document.
    digest      bytea NOT NULL,
    content     bytea,
    bytes       int8 NOT NULL DEFAULT 0,
    status      text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'ready', 'failed')),
    error       text,
    chunks      int4 NOT NULL DEFAULT 0,
    tokens      int8 NOT NULL DEFAULT 0,
    attempts    int4 NOT NULL DEFAULT 0,
    lease_until timestamptz,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (base_id, digest)
);
CREATE INDEX knowledge_documents_base ON knowledge_documents (base_id, created_at);
CREATE INDEX knowledge_documents_pending ON knowledge_documents (created_at) WHERE status = 'pending';

CREATE TABLE knowledge_chunks (
    id          uuid PRIMARY KEY,
    document_id uuid NOT NULL REFERENCES knowledge_documents (id) ON DELETE CASCADE,
    base_id     uuid NOT NULL,
    seq         int4 NOT NULL,
    -- The headings the chunk sits under ("Install > Requirements"), searched with its text.
    heading     text NOT NULL DEFAULT '',
    text        text NOT NULL,
    tokens      int4 NOT NULL,
    search      tsvector GENERATED ALWAYS AS
                    (setweight(to_tsvector('english', heading), 'A') || to_tsvector('english', text)) STORED,
    UNIQUE (document_id, seq)
);
CREATE INDEX knowledge_chunks_search ON knowledge_chunks USING gin (search);
CREATE INDEX knowledge_chunks_base ON knowledge_chunks (base_id);

-- A posted document wakes the ingesters of every replica.
CREATE FUNCTION agentd_knowledge_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('agentd_knowledge', '');
    RETURN NULL;
END $$;
CREATE TRIGGER knowledge_documents_notify AFTER INSERT ON knowledge_documents
    FOR EACH STATEMENT EXECUTE FUNCTION agentd_knowledge_notify();
