//! Tenants and API keys. A key is kept as the SHA-256 digest of its text and a short prefix that
//! finds it; the text itself is never stored. A tenant's `max_queued` is kept in the transaction
//! that stores a kickoff's runs ([`hold_queue`]).

use chrono::{DateTime, Utc};
use sqlx::{Postgres, Transaction};
use uuid::Uuid;

use super::audit::Audit;
use super::{Store, StoreResult};
use crate::domain::kickoff::NewRun;
use crate::domain::tenant::KeyRecord;
use crate::domain::tenant::TenantRecord;
use crate::domain::KeyId;
use crate::domain::TenantId;
use crate::domain::{QueueFull, QuotaPatch, Quotas};

/// What a tenant has in the queue and in flight, and spent today (UTC; counted while it has a
/// daily cap).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TenantLoad {
    pub running: i64,
    pub queued: i64,
    pub tokens_today: i64,
    pub cost_usd_today: f64,
}

struct TenantRow {
    name: String,
    created_at: DateTime<Utc>,
    max_running: Option<i32>,
    max_queued: Option<i32>,
    max_tokens_per_day: Option<i64>,
    max_cost_usd_per_day: Option<f64>,
}

impl From<TenantRow> for TenantRecord {
    fn from(row: TenantRow) -> Self {
        let quotas = Quotas {
            max_running: row.max_running.and_then(|n| u32::try_from(n).ok()),
            max_queued: row.max_queued.and_then(|n| u32::try_from(n).ok()),
            max_tokens_per_day: row.max_tokens_per_day.and_then(|n| u64::try_from(n).ok()),
            max_cost_usd_per_day: row.max_cost_usd_per_day,
        };
        Self { name: row.name, created_at: row.created_at, quotas }
    }
}

fn db_count(n: Option<u32>) -> Option<i32> {
    n.map(|n| i32::try_from(n).unwrap_or(i32::MAX))
}

fn db_tokens(n: Option<u64>) -> Option<i64> {
    n.map(|n| i64::try_from(n).unwrap_or(i64::MAX))
}

/// A key to store: its digest, never its text.
#[derive(Debug, Clone)]
pub struct NewKey {
    pub id: Uuid,
    pub tenant: TenantId,
    pub name: String,
    pub prefix: String,
    pub digest: Vec<u8>,
    pub scopes: Vec<String>,
    pub expires_at: Option<DateTime<Utc>>,
}

/// What the database says now of a key an open stream was opened with (and of its tenant).
#[derive(Debug, Clone, PartialEq)]
pub struct KeyStanding {
    pub id: KeyId,
    /// The key's row exists (a revoked key keeps its row).
    pub exists: bool,
    pub revoked: bool,
    pub expires_at: Option<DateTime<Utc>>,
    /// The tenant the key was read with exists.
    pub tenant_exists: bool,
}

/// A live key with the prefix a presented key has, for the caller to compare digests.
#[derive(Debug, Clone)]
pub struct KeyCandidate {
    pub id: Uuid,
    pub tenant: TenantId,
    pub digest: Vec<u8>,
    pub scopes: Vec<String>,
    pub expires_at: Option<DateTime<Utc>>,
}

impl Store {
    /// Create a tenant with its quotas; `None` when one of that name exists.
    #[tracing::instrument(skip_all, fields(tenant = %name), err)]
    pub async fn create_tenant(
        &self,
        name: &TenantId,
        quotas: &Quotas,
        audit: &Audit,
    ) -> StoreResult<Option<TenantRecord>> {
        let mut tx = self.pool.begin().await?;
        let row = sqlx::query_as!(
            TenantRow,
            r#"INSERT INTO tenants (name, max_running, max_queued, max_tokens_per_day, max_cost_usd_per_day)
               VALUES ($1, $2, $3, $4, $5) ON CONFLICT (name) DO NOTHING
               RETURNING name, created_at, max_running, max_queued, max_tokens_per_day, max_cost_usd_per_day"#,
            name.as_str(),
            db_count(quotas.max_running),
            db_count(quotas.max_queued),
            db_tokens(quotas.max_tokens_per_day),
            quotas.max_cost_usd_per_day,
        )
        .fetch_optional(&mut *tx)
        .await?;
        if row.is_some() {
            audit.record_in(&mut tx, name, Some(&format!("/v1/tenants/{name}"))).await?;
        }
        tx.commit().await?;
        Ok(row.map(TenantRecord::from))
    }

    /// Change a tenant's quotas (absent fields stay, `null` lifts a limit); `None` when there is
    /// no such tenant. A daily cap set now starts from what the tenant's runs spent today.
    #[tracing::instrument(skip_all, fields(tenant = %name), err)]
    pub async fn update_tenant_quotas(
        &self,
        name: &TenantId,
        patch: &QuotaPatch,
        audit: &Audit,
    ) -> StoreResult<Option<TenantRecord>> {
        let mut tx = self.pool.begin().await?;
        let row = sqlx::query_as!(
            TenantRow,
            r#"UPDATE tenants
                  SET max_running = CASE WHEN $2 THEN $3 ELSE max_running END,
                      max_queued = CASE WHEN $4 THEN $5 ELSE max_queued END,
                      max_tokens_per_day = CASE WHEN $6 THEN $7 ELSE max_tokens_per_day END,
                      max_cost_usd_per_day = CASE WHEN $8 THEN $9 ELSE max_cost_usd_per_day END
                WHERE name = $1
            RETURNING name, created_at, max_running, max_queued, max_tokens_per_day, max_cost_usd_per_day"#,
            name.as_str(),
            patch.max_running.is_some(),
            db_count(patch.max_running.flatten()),
            patch.max_queued.is_some(),
            db_count(patch.max_queued.flatten()),
            patch.max_tokens_per_day.is_some(),
            db_tokens(patch.max_tokens_per_day.flatten()),
            patch.max_cost_usd_per_day.is_some(),
            patch.max_cost_usd_per_day.flatten(),
        )
        .fetch_optional(&mut *tx)
        .await?;
        let Some(row) = row else {
            tx.rollback().await?;
            return Ok(None);
        };
        let record = TenantRecord::from(row);
        let resource = format!("/v1/tenants/{name}");
        if record.quotas.caps_spend() {
            // Runs of today (ids are UUIDv7: time-ordered) that the ledger has not counted.
            sqlx::query!(
                r#"INSERT INTO tenant_spend (tenant, day, tokens, cost_usd)
                   SELECT $1, (now() AT TIME ZONE 'UTC')::date,
                          coalesce(sum(prompt_tokens + completion_tokens), 0)::int8, coalesce(sum(cost_usd), 0)
                     FROM runs
                    WHERE tenant = $1 AND created_at >= (now() AT TIME ZONE 'UTC')::date::timestamp AT TIME ZONE 'UTC'
                   ON CONFLICT (tenant, day) DO NOTHING"#,
                name.as_str()
            )
            .execute(&mut *tx)
            .await?;
        }
        audit.record_in(&mut tx, name, Some(&resource)).await?;
        tx.commit().await?;
        Ok(Some(record))
    }

    /// Every tenant, by name.
    #[tracing::instrument(skip_all, err)]
    pub async fn list_tenants(&self) -> StoreResult<Vec<TenantRecord>> {
        let rows = sqlx::query_as!(
            TenantRow,
            r#"SELECT name, created_at, max_running, max_queued, max_tokens_per_day, max_cost_usd_per_day
                 FROM tenants ORDER BY name"#
        )
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(TenantRecord::from).collect())
    }

    /// The tenant of this name.
    #[tracing::instrument(skip_all, fields(tenant = %name), err)]
    pub async fn get_tenant(&self, name: &TenantId) -> StoreResult<Option<TenantRecord>> {
        let row = sqlx::query_as!(
            TenantRow,
            r#"SELECT name, created_at, max_running, max_queued, max_tokens_per_day, max_cost_usd_per_day
                 FROM tenants WHERE name = $1"#,
            name.as_str()
        )
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(TenantRecord::from))
    }

    /// What a tenant has running and queued, and its ledger's spend today.
    #[tracing::instrument(skip_all, fields(tenant = %name), err)]
    pub async fn tenant_load(&self, name: &TenantId) -> StoreResult<TenantLoad> {
        let row = sqlx::query!(
            r#"SELECT (SELECT count(*) FROM runs WHERE tenant = $1 AND status IN ('running', 'cancelling')) AS "running!",
                      (SELECT count(*) FROM runs WHERE tenant = $1 AND status = 'queued')
                        + (SELECT count(*) FROM runs WHERE tenant = $1 AND status = 'waiting') AS "queued!",
                      coalesce(s.tokens, 0) AS "tokens!", coalesce(s.cost_usd, 0) AS "cost_usd!"
                 FROM (SELECT 1) AS one
                 LEFT JOIN tenant_spend AS s ON s.tenant = $1 AND s.day = (now() AT TIME ZONE 'UTC')::date"#,
            name.as_str()
        )
        .fetch_one(&self.pool)
        .await?;
        Ok(TenantLoad {
            running: row.running,
            queued: row.queued,
            tokens_today: row.tokens,
            cost_usd_today: row.cost_usd,
        })
    }

    /// What a tenant's ledger says it spent today (UTC): tokens and US dollars.
    #[tracing::instrument(skip_all, fields(tenant = %name), err)]
    pub async fn spent_today(&self, name: &TenantId) -> StoreResult<(u64, f64)> {
        let row = sqlx::query!(
            r#"SELECT tokens, cost_usd FROM tenant_spend
                WHERE tenant = $1 AND day = (now() AT TIME ZONE 'UTC')::date"#,
            name.as_str()
        )
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map_or((0, 0.0), |r| (u64::try_from(r.tokens).unwrap_or(0), r.cost_usd)))
    }

    /// Store a key (its digest).
    #[tracing::instrument(skip_all, fields(key = %key.id, tenant = %key.tenant), err)]
    pub async fn create_key(&self, key: &NewKey, audit: &Audit) -> StoreResult<KeyRecord> {
        let mut tx = self.pool.begin().await?;
        let record = sqlx::query_as!(
            KeyRecord,
            r#"INSERT INTO api_keys (id, tenant, name, prefix, digest, scopes, expires_at)
               VALUES ($1, $2, $3, $4, $5, $6, $7)
               RETURNING id, tenant, name, prefix, scopes, created_at, last_used_at, expires_at"#,
            key.id,
            key.tenant.as_str(),
            key.name,
            key.prefix,
            key.digest,
            &key.scopes,
            key.expires_at,
        )
        .fetch_one(&mut *tx)
        .await?;
        audit.record_in(&mut tx, &key.tenant, Some(&format!("/v1/keys/{}", key.id))).await?;
        tx.commit().await?;
        Ok(record)
    }

    /// Keys not revoked (of `tenant`, or every tenant's), oldest first.
    #[tracing::instrument(skip_all, err)]
    pub async fn list_keys(&self, tenant: Option<&TenantId>) -> StoreResult<Vec<KeyRecord>> {
        Ok(sqlx::query_as!(
            KeyRecord,
            r#"SELECT id, tenant, name, prefix, scopes, created_at, last_used_at, expires_at
                 FROM api_keys WHERE revoked_at IS NULL AND ($1::text IS NULL OR tenant = $1)
                ORDER BY created_at, id"#,
            tenant.map(TenantId::as_str)
        )
        .fetch_all(&self.pool)
        .await?)
    }

    /// Revoke a key (of `tenant`, or any tenant's); `false` when there is no such live key.
    #[tracing::instrument(skip_all, fields(key = %id), err)]
    pub async fn revoke_key(&self, id: KeyId, tenant: Option<&TenantId>, audit: &Audit) -> StoreResult<bool> {
        let mut tx = self.pool.begin().await?;
        let revoked = sqlx::query_scalar!(
            r#"UPDATE api_keys SET revoked_at = now()
                WHERE id = $1 AND revoked_at IS NULL AND ($2::text IS NULL OR tenant = $2)
            RETURNING tenant"#,
            id.0,
            tenant.map(TenantId::as_str)
        )
        .fetch_optional(&mut *tx)
        .await?;
        if let Some(owner) = revoked.clone() {
            audit.record_in(&mut tx, &TenantId::from(owner), None).await?;
        }
        tx.commit().await?;
        Ok(revoked.is_some())
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

    /// How keys stand now (`ids[i]` read with tenant `tenants[i]`), all in one query: one row per
    /// key asked about, whether or not it still exists.
    #[tracing::instrument(skip_all, fields(keys = ids.len()), err)]
    pub async fn key_standings(&self, ids: &[KeyId], tenants: &[TenantId]) -> StoreResult<Vec<KeyStanding>> {
        Ok(sqlx::query_as!(
            KeyStanding,
            r#"SELECT w.id AS "id!: KeyId", k.id IS NOT NULL AS "exists!", k.revoked_at IS NOT NULL AS "revoked!",
                      k.expires_at, t.name IS NOT NULL AS "tenant_exists!"
                 FROM unnest($1::uuid[], $2::text[]) AS w (id, tenant)
                 LEFT JOIN api_keys AS k ON k.id = w.id
                 LEFT JOIN tenants AS t ON t.name = w.tenant"#,
            ids as &[KeyId],
            tenants as &[TenantId]
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
    pub async fn touch_key(&self, id: KeyId) -> StoreResult<()> {
        sqlx::query!(
            r#"UPDATE api_keys SET last_used_at = now()
                WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')"#,
            id.0
        )
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}

/// Keep the `max_queued` of the tenant of `runs` (one kickoff's, of one tenant) in `tx`, when the
/// runs carry one (see [`hold_tenant_queue`]). Runs without a limit cost nothing here.
pub(super) async fn hold_queue(
    tx: &mut Transaction<'_, Postgres>,
    runs: &[NewRun],
) -> StoreResult<Result<(), QueueFull>> {
    match runs.first().and_then(|run| Some((&run.tenant, run.max_queued?))) {
        Some((tenant, max)) => hold_tenant_queue(tx, tenant, max, runs.len()).await,
        None => Ok(Ok(())),
    }
}

/// Which of a group commit's `kickoffs` fit their tenants' `max_queued`, in order (each kickoff
/// counted against one is `Some((tenant, max_queued, runs it adds))`): the batch takes the queue lock of every tenant of it that has one (in
/// the order of their names, so two batches never wait on each other in a circle), counts their
/// queued and waiting runs once, then admits kickoffs one after another while they fit. Kickoffs
/// without a limit are admitted without a statement.
pub(super) async fn admit_kickoffs(
    tx: &mut Transaction<'_, Postgres>,
    kickoffs: &[Option<(&str, u32, usize)>],
) -> StoreResult<Vec<Result<(), QueueFull>>> {
    let tenants: std::collections::BTreeSet<&str> =
        kickoffs.iter().flatten().map(|(tenant, ..)| *tenant).collect();
    let mut queued: std::collections::HashMap<String, i64> = std::collections::HashMap::new();
    if !tenants.is_empty() {
        for tenant in &tenants {
            sqlx::query!(
                "SELECT pg_advisory_xact_lock(hashtextextended('agentd.tenant.queued:' || $1, 0))",
                tenant
            )
            .execute(&mut **tx)
            .await?;
        }
        // A statement of its own, after the locks: its snapshot sees every run committed before.
        let names: Vec<String> = tenants.iter().map(|tenant| (*tenant).to_owned()).collect();
        let counts = sqlx::query!(
            r#"SELECT t.name AS "tenant!",
                      (SELECT count(*) FROM runs WHERE tenant = t.name AND status = 'queued')
                    + (SELECT count(*) FROM runs WHERE tenant = t.name AND status = 'waiting') AS "n!"
                 FROM unnest($1::text[]) AS t(name)"#,
            &names
        )
        .fetch_all(&mut **tx)
        .await?;
        queued.extend(counts.into_iter().map(|row| (row.tenant, row.n)));
    }
    Ok(kickoffs
        .iter()
        .map(|&limit| {
            let Some((tenant, max, adding)) = limit else { return Ok(()) };
            let count = queued.entry(tenant.to_owned()).or_default();
            if count.saturating_add(adding as i64) > i64::from(max) {
                return Err(QueueFull {
                    tenant: TenantId::from(tenant.to_owned()),
                    queued: *count,
                    max,
                    adding,
                });
            }
            *count += adding as i64;
            Ok(())
        })
        .collect())
}

/// Take `tenant`'s queue lock in `tx` (held until `tx` ends, so what queues the tenant's runs on
/// every replica is counted one after another), then count its queued and waiting runs in a
/// statement of its own (whose snapshot sees every run committed before the lock was granted).
/// `Err` when `adding` more would exceed `max`: the caller rolls `tx` back. A transaction takes
/// this lock before any thread's row lock.
pub(super) async fn hold_tenant_queue(
    tx: &mut Transaction<'_, Postgres>,
    tenant: &TenantId,
    max: u32,
    adding: usize,
) -> StoreResult<Result<(), QueueFull>> {
    sqlx::query!(
        "SELECT pg_advisory_xact_lock(hashtextextended('agentd.tenant.queued:' || $1, 0))",
        tenant.as_str()
    )
    .execute(&mut **tx)
    .await?;
    let queued = sqlx::query_scalar!(
        r#"SELECT (SELECT count(*) FROM runs WHERE tenant = $1 AND status = 'queued')
                + (SELECT count(*) FROM runs WHERE tenant = $1 AND status = 'waiting') AS "n!""#,
        tenant.as_str()
    )
    .fetch_one(&mut **tx)
    .await?;
    if queued.saturating_add(adding as i64) > i64::from(max) {
        return Ok(Err(QueueFull { tenant: tenant.to_owned(), queued, max, adding }));
    }
    Ok(Ok(()))
}
