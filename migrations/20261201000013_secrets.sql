-- Secrets crews name in tool headers and queries. Values are sealed by the server (AES-256-GCM
-- under AGENTD_SECRETS_KEY, the name as associated data); the database never holds a value in the
-- clear. `key_id` names the key that sealed a row (a digest of it, not the key), so a server
-- started with another key says so instead of failing to decrypt.
CREATE TABLE secrets (
    name        text PRIMARY KEY,
    key_id      text NOT NULL,
    nonce       bytea NOT NULL,
    ciphertext  bytea NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
