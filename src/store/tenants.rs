//! Tenants and API keys. A key is kept as the SHA-256 digest of its text and a short prefix that
//! finds it; the text itself is never stored.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{Store, StoreResult};

/// A tenant.
#[derive(Debug, Clone, PartialEq)]
pub struct TenantRecord {
    pub name: String,
    pub created_at: DateTime<Utc>,
}

/// An API key as it may be shown: never its text.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyRecord {
    pub id: Uuid,
    pub tenant: String,
    pub name: String,
    /// The key's first characters, to tell keys apart (not secret).
    pub prefix: String,
    pub scopes: Vec<String>,
    pub created_at: DateTime<Utc>,
    pub last_used_at: Option<DateTime<Utc>>,
    pub expires_at: Option<DateTime<Utc>>,
}

/// A key to store: its digest, never its text.
#[derive(Debug, Clone)]
pub struct NewKey {
    pub id: Uuid,
    pub tenant: String,
    pub name: String,
    pub prefix: String,
    pub digest: Vec<u8>,
    pub scopes: Vec<String>,
    pub expires_at: Option<DateTime<Utc>>,
}

/// A live key with the prefix a presented key has, for the caller to compare digests.
#[derive(Debug, Clone)]
pub struct KeyCandidate {
    pub id: Uuid,
    pub tenant: String,
    pub digest: Vec<u8>,
    pub scopes: Vec<String>,
    pub expires_at: Option<DateTime<Utc>>,
}

impl Store {
    /// Create a tenant; `false` when one of that name exists.
    #[tracing::instrument(skip_all, fields(tenant = %name), err)]
    pub async fn create_tenant(&self, name: &str) -> StoreResult<Option<TenantRecord>> {
        let row = sqlx::query_as!(
            TenantRecord,
            "INSERT INTO tenants (name) VALUES ($1) ON CONFLICT (name) DO NOTHING RETURNING name, created_at",
            name
        )
        .fetch_optional(&self.pool)
        .await?;
        Ok(row)
    }

    /// Every tenant, by name.
    #[tracing::instrument(skip_all, err)]
    pub async fn list_tenants(&self) -> StoreResult<Vec<TenantRecord>> {
        Ok(sqlx::query_as!(TenantRecord, "SELECT name, created_at FROM tenants ORDER BY name")
            .fetch_all(&self.pool)
            .await?)
    }

    /// The tenant of this name.
    #[tracing::instrument(skip_all, fields(tenant = %name), err)]
    pub async fn get_tenant(&self, name: &str) -> StoreResult<Option<TenantRecord>> {
        Ok(sqlx::query_as!(TenantRecord, "SELECT name, created_at FROM tenants WHERE name = $1", name)
            .fetch_optional(&self.pool)
            .await?)
    }

    /// Store a key (its digest).
    #[tracing::instrument(skip_all, fields(key = %key.id, tenant = %key.tenant), err)]
    pub async fn create_key(&self, key: &NewKey) -> StoreResult<KeyRecord> {
        Ok(sqlx::query_as!(
            KeyRecord,
            r#"INSERT INTO api_keys (id, tenant, name, prefix, digest, scopes, expires_at)
               VALUES ($1, $2, $3, $4, $5, $6, $7)
               RETURNING id, tenant, name, prefix, scopes, created_at, last_used_at, expires_at"#,
            key.id,
            key.tenant,
            key.name,
            key.prefix,
            key.digest,
            &key.scopes,
            key.expires_at,
        )
        .fetch_one(&self.pool)
        .await?)
    }

    /// Keys not revoked (of `tenant`, or every tenant's), oldest first.
    #[tracing::instrument(skip_all, err)]
    pub async fn list_keys(&self, tenant: Option<&str>) -> StoreResult<Vec<KeyRecord>> {
        Ok(sqlx::query_as!(
            KeyRecord,
            r#"SELECT id, tenant, name, prefix, scopes, created_at, last_used_at, expires_at
                 FROM api_keys WHERE revoked_at IS NULL AND ($1::text IS NULL OR tenant = $1)
                ORDER BY created_at, id"#,
            tenant
        )
        .fetch_all(&self.pool)
        .await?)
    }

    /// Revoke a key (of `tenant`, or any tenant's); `false` when there is no such live key.
    #[tracing::instrument(skip_all, fields(key = %id), err)]
    pub async fn revoke_key(&self, id: Uuid, tenant: Option<&str>) -> StoreResult<bool> {
        let revoked = sqlx::query!(
            r#"UPDATE api_keys SET revoked_at = now()
                WHERE id = $1 AND revoked_at IS NULL AND ($2::text IS NULL OR tenant = $2)"#,
            id,
            tenant
        )
        .execute(&self.pool)
        .await?;
        Ok(revoked.rows_affected() > 0)
    }

    /// The live keys whose text starts with `prefix`.
    #[tracing::instrument(skip_all, err)]
    pub async fn key_candidates(&self, prefix: &str) -> StoreResult<Vec<KeyCandidate>> {
        Ok(sqlx::query_as!(
            KeyCandidate,
            r#"SELECT id, tenant, digest, scopes, expires_at FROM api_keys
                WHERE prefix = $1 AND revoked_at IS NULL"#,
            prefix
        )
        .fetch_all(&self.pool)
        .await?)
    }

    /// Is any key stored (live)? Without keys, here or configured, the API is open.
    #[tracing::instrument(skip_all, err)]
    pub async fn has_keys(&self) -> StoreResult<bool> {
        Ok(sqlx::query_scalar!(
            r#"SELECT EXISTS (SELECT 1 FROM api_keys WHERE revoked_at IS NULL
                                 AND (expires_at IS NULL OR expires_at > now())) AS "exists!""#
        )
        .fetch_one(&self.pool)
        .await?)
    }

    /// Note that a key was used (at most about once a minute per key).
    #[tracing::instrument(skip_all, fields(key = %id), err)]
    pub async fn touch_key(&self, id: Uuid) -> StoreResult<()> {
        sqlx::query!(
            r#"UPDATE api_keys SET last_used_at = now()
                WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')"#,
            id
        )
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}
