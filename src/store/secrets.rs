//! Stored secrets: sealed values by tenant and name. The store keeps what [`crate::secrets`] sealed and never
//! sees a value in the clear.

use super::{Audit, Store, StoreResult};
use crate::domain::crew::UpsertOutcome;
use crate::domain::secret::SecretInfo;
use crate::domain::TenantId;

/// A secret as it is stored: sealed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealedSecret {
    /// The digest naming the key that sealed it.
    pub key_id: String,
    pub nonce: Vec<u8>,
    pub ciphertext: Vec<u8>,
}

impl Store {
    /// Create or replace the secret `name`.
    #[tracing::instrument(skip_all, fields(secret = %name), err)]
    pub async fn put_secret(
        &self,
        tenant: &TenantId,
        name: &str,
        sealed: &SealedSecret,
        audit: &Audit,
    ) -> StoreResult<(SecretInfo, UpsertOutcome)> {
        let mut tx = self.pool.begin().await?;
        let row = sqlx::query!(
            r#"INSERT INTO secrets (tenant, name, key_id, nonce, ciphertext) VALUES ($5, $1, $2, $3, $4)
               ON CONFLICT (tenant, name) DO UPDATE
                 SET key_id = EXCLUDED.key_id, nonce = EXCLUDED.nonce,
                     ciphertext = EXCLUDED.ciphertext, updated_at = now()
               RETURNING name, created_at, updated_at, (xmax = 0) AS "inserted!""#,
            name,
            sealed.key_id,
            sealed.nonce,
            sealed.ciphertext,
            tenant.as_str()
        )
        .fetch_one(&mut *tx)
        .await?;
        audit.record_in(&mut tx, tenant, None).await?;
        tx.commit().await?;
        let outcome = if row.inserted { UpsertOutcome::Created } else { UpsertOutcome::Replaced };
        Ok((SecretInfo { name: row.name, created_at: row.created_at, updated_at: row.updated_at }, outcome))
    }

    /// The sealed value of `name`.
    #[tracing::instrument(skip_all, fields(secret = %name), err)]
    pub async fn get_secret(&self, tenant: &TenantId, name: &str) -> StoreResult<Option<SealedSecret>> {
        Ok(sqlx::query_as!(
            SealedSecret,
            "SELECT key_id, nonce, ciphertext FROM secrets WHERE tenant = $1 AND name = $2",
            tenant.as_str(),
            name
        )
        .fetch_optional(&self.pool)
        .await?)
    }

    /// Every secret's name and times, by name.
    #[tracing::instrument(skip_all, err)]
    pub async fn list_secrets(&self, tenant: &TenantId) -> StoreResult<Vec<SecretInfo>> {
        Ok(sqlx::query_as!(
            SecretInfo,
            "SELECT name, created_at, updated_at FROM secrets WHERE tenant = $1 ORDER BY name",
            tenant.as_str()
        )
        .fetch_all(&self.pool)
        .await?)
    }

    /// Those of `names` that are not stored, in the order given.
    #[tracing::instrument(skip_all, err)]
    pub async fn missing_secrets(&self, tenant: &TenantId, names: &[String]) -> StoreResult<Vec<String>> {
        if names.is_empty() {
            return Ok(Vec::new());
        }
        let found = sqlx::query_scalar!(
            "SELECT name FROM secrets WHERE tenant = $1 AND name = ANY($2)",
            tenant.as_str(),
            names
        )
        .fetch_all(&self.pool)
        .await?;
        Ok(names.iter().filter(|name| !found.contains(name)).cloned().collect())
    }

    /// Remove a secret; `false` if there was none.
    #[tracing::instrument(skip_all, fields(secret = %name), err)]
    pub async fn delete_secret(&self, tenant: &TenantId, name: &str, audit: &Audit) -> StoreResult<bool> {
        self.delete_audited(
            sqlx::query!("DELETE FROM secrets WHERE tenant = $1 AND name = $2", tenant.as_str(), name),
            tenant,
            audit,
        )
        .await
    }
}
