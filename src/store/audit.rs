//! The audit log: every change made through the API, who made it and how it ended. A change that
//! succeeded is recorded by the store method that makes it, in the same transaction
//! ([`Audit::record_in`]); a refused one (403, 404, 409, 422...) is recorded after the refusal
//! ([`Store::record_refusal`]).

use std::sync::atomic::{AtomicBool, Ordering};

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

use super::{Store, StoreResult};
use crate::domain::audit::AuditRecord;
pub use crate::domain::audit::Outcome;
use crate::domain::KeyId;
use crate::domain::TenantId;

/// A change being made through the API: by which key (none for the keys of `AGENTD_API_KEYS`, an
/// open API and the command line), of which tenant, what (`secret.put`, `run.cancel`...) and to
/// what (the resource's path).
#[derive(Debug)]
pub struct Audit {
    pub key_id: Option<KeyId>,
    /// The caller's tenant (the record names the resource's).
    pub tenant: TenantId,
    pub action: String,
    pub resource: String,
    recorded: AtomicBool,
}

/// What a change was made to, for the audit record to take its tenant from.
#[derive(Debug, Clone, Copy)]
pub enum Owner {
    Run(Uuid),
    Webhook(Uuid),
}

/// Which records to list, newest first.
#[derive(Debug, Clone, Default)]
pub struct AuditFilter {
    /// Only this tenant's (always set for a caller who is not an admin).
    pub tenant: Option<TenantId>,
    pub action: Option<String>,
    pub outcome: Option<String>,
    pub key_id: Option<Uuid>,
    /// Only resources whose path starts with this.
    pub resource: Option<String>,
    pub since: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
    /// Older than this record (the cursor).
    pub before: Option<Uuid>,
    pub limit: i64,
}

impl Audit {
    pub fn new(key_id: Option<KeyId>, tenant: &TenantId, action: &str, resource: &str) -> Self {
        Self {
            key_id,
            tenant: tenant.to_owned(),
            action: action.to_owned(),
            resource: resource.to_owned(),
            recorded: AtomicBool::new(false),
        }
    }

    /// Who makes the change, as records that keep it say: the key's id, or `operator` (a key
    /// of `AGENTD_API_KEYS`, or an open API).
    pub fn actor(&self) -> String {
        self.key_id.map_or_else(|| "operator".to_owned(), |key| key.to_string())
    }

    /// Record the change as succeeded, on `tenant`'s resource (`resource` when the change made
    /// it and only now knows its path), in the change's own transaction.
    pub async fn record_in(
        &self,
        tx: &mut PgConnection,
        tenant: &TenantId,
        resource: Option<&str>,
    ) -> StoreResult<()> {
        insert(tx, self, tenant, resource.unwrap_or(&self.resource), Outcome::Succeeded).await?;
        self.recorded.store(true, Ordering::Release);
        Ok(())
    }

    /// End a change's transaction `tx`: recorded on `tenant`'s resource and committed when it
    /// changed something (`tenant` is `Some`), rolled back when it did not; whether it did.
    pub async fn settle(
        &self,
        mut tx: sqlx::Transaction<'_, sqlx::Postgres>,
        tenant: Option<&TenantId>,
    ) -> StoreResult<bool> {
        let Some(tenant) = tenant else {
            tx.rollback().await?;
            return Ok(false);
        };
        self.record_in(&mut tx, tenant, None).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// [`Audit::settle`] for a change of what `owner` names (its tenant read in `tx`).
    pub async fn settle_for(
        &self,
        mut tx: sqlx::Transaction<'_, sqlx::Postgres>,
        owner: Option<Owner>,
    ) -> StoreResult<bool> {
        let Some(owner) = owner else {
            tx.rollback().await?;
            return Ok(false);
        };
        self.record_for(&mut tx, owner).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Record the change as succeeded on what `owner` names, whose tenant the record takes (read
    /// in the change's transaction: before a deletion, or after any other change).
    pub async fn record_for(&self, tx: &mut PgConnection, owner: Owner) -> StoreResult<()> {
        let tenant = match owner {
            Owner::Run(id) => {
                sqlx::query_scalar!("SELECT tenant FROM runs WHERE id = $1", id)
                    .fetch_optional(&mut *tx)
                    .await?
            }
            Owner::Webhook(id) => {
                sqlx::query_scalar!("SELECT tenant FROM webhook_endpoints WHERE id = $1", id)
                    .fetch_optional(&mut *tx)
                    .await?
            }
        };
        let tenant = tenant.map(TenantId::from);
        self.record_in(tx, tenant.as_ref().unwrap_or(&self.tenant), None).await
    }

    /// Has a store method recorded it (in a transaction that may yet have rolled back: this says
    /// only that the change reached its audit write)?
    pub fn is_recorded(&self) -> bool {
        self.recorded.load(Ordering::Acquire)
    }
}

async fn insert(
    conn: &mut PgConnection,
    audit: &Audit,
    tenant: &TenantId,
    resource: &str,
    outcome: Outcome,
) -> StoreResult<()> {
    sqlx::query!(
        r#"INSERT INTO audit_log (id, tenant, key_id, action, resource, outcome)
           VALUES ($1, $2, $3, $4, $5, $6)"#,
        Uuid::now_v7(),
        tenant.as_str(),
        audit.key_id.map(uuid::Uuid::from),
        audit.action,
        resource,
        outcome.as_str(),
    )
    .execute(conn)
    .await?;
    Ok(())
}

impl Store {
    /// Record a change that did not happen (refused, or failed), on the caller's tenant.
    #[tracing::instrument(skip_all, fields(action = %audit.action), err)]
    pub async fn record_refusal(&self, audit: &Audit, outcome: Outcome) -> StoreResult<()> {
        let mut conn = self.pool.acquire().await?;
        insert(&mut conn, audit, &audit.tenant, &audit.resource, outcome).await
    }

    /// Audit records, newest first.
    #[tracing::instrument(skip_all, err)]
    pub async fn list_audit(&self, filter: &AuditFilter) -> StoreResult<Vec<AuditRecord>> {
        Ok(sqlx::query_as!(
            AuditRecord,
            r#"SELECT id, at, tenant, key_id, action, resource, outcome FROM audit_log
                WHERE ($1::text IS NULL OR tenant = $1)
                  AND ($2::text IS NULL OR action = $2)
                  AND ($3::text IS NULL OR outcome = $3)
                  AND ($4::uuid IS NULL OR key_id = $4)
                  AND ($5::text IS NULL OR starts_with(resource, $5))
                  AND ($6::timestamptz IS NULL OR at >= $6)
                  AND ($7::timestamptz IS NULL OR at < $7)
                  AND ($8::uuid IS NULL OR id < $8)
                ORDER BY id DESC
                LIMIT $9"#,
            filter.tenant.as_ref().map(TenantId::as_str),
            filter.action,
            filter.outcome,
            filter.key_id,
            filter.resource,
            filter.since,
            filter.until,
            filter.before,
            filter.limit,
        )
        .fetch_all(&self.pool)
        .await?)
    }

    /// Remove audit records older than `cutoff`, up to `batch` of them; how many went.
    #[tracing::instrument(skip_all, err)]
    pub async fn prune_audit(&self, cutoff: DateTime<Utc>, batch: i64) -> StoreResult<u64> {
        let deleted = sqlx::query!(
            r#"DELETE FROM audit_log WHERE id IN (
                   SELECT id FROM audit_log WHERE at < $1 ORDER BY id LIMIT $2)"#,
            cutoff,
            batch
        )
        .execute(&self.pool)
        .await?;
        Ok(deleted.rows_affected())
    }
}
