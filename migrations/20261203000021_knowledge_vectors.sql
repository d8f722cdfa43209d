-- The length of a knowledge base's vectors, known once its embedding model first answered (its
-- chunks' vectors live in `knowledge_vectors`, made at start-up where the database has pgvector:
-- see src/store/vectors.rs).
ALTER TABLE knowledge_bases ADD COLUMN dims int4 CHECK (dims BETWEEN 1 AND 16000);
