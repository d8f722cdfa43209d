//! Registered crews: specs stored by tenant and name, so kickoffs can say `"crew": "<name>"`.

use chrono::{DateTime, Utc};

use super::{decode, Audit, Store, StoreResult};
use crate::domain::crew::CrewRecord;
use crate::domain::crew::UpsertOutcome;
use crate::domain::CrewSpec;
use crate::domain::TenantId;

struct CrewRow {
    name: String,
    spec: serde_json::Value,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

impl CrewRow {
    fn into_record(self) -> StoreResult<CrewRecord> {
        Ok(CrewRecord {
            spec: decode(self.spec, "crews.spec")?,
            name: self.name,
            created_at: self.created_at,
            updated_at: self.updated_at,
        })
    }
}

impl Store {
    /// Create or replace the crew named `spec.name`.
    #[tracing::instrument(skip_all, fields(crew = %spec.name), err)]
    pub async fn upsert_crew(
        &self,
        tenant: &TenantId,
        spec: &CrewSpec,
        audit: &Audit,
    ) -> StoreResult<(CrewRecord, UpsertOutcome)> {
        let json = serde_json::to_value(spec)
            .map_err(|e| super::StoreError::Corrupt(format!("crew spec does not serialize: {e}")))?;
        let mut tx = self.pool.begin().await?;
        // `xmax = 0` holds for a freshly inserted row and not for one the upsert updated.
        let row = sqlx::query!(
            r#"INSERT INTO crews (tenant, name, spec) VALUES ($3, $1, $2)
               ON CONFLICT (tenant, name) DO UPDATE SET spec = EXCLUDED.spec, updated_at = now()
               RETURNING name, spec, created_at, updated_at, (xmax = 0) AS "inserted!""#,
            spec.name,
            json,
            tenant.as_str()
        )
        .fetch_one(&mut *tx)
        .await?;
        audit.record_in(&mut tx, tenant, None).await?;
        tx.commit().await?;
        let outcome = if row.inserted { UpsertOutcome::Created } else { UpsertOutcome::Replaced };
        let record = CrewRow {
            name: row.name,
            spec: row.spec,
            created_at: row.created_at,
            updated_at: row.updated_at,
        }
        .into_record()?;
        Ok((record, outcome))
    }

    /// The tenant's crew with this name.
    #[tracing::instrument(skip_all, fields(crew = %name), err)]
    pub async fn get_crew(&self, tenant: &TenantId, name: &str) -> StoreResult<Option<CrewRecord>> {
        let row = sqlx::query_as!(
            CrewRow,
            "SELECT name, spec, created_at, updated_at FROM crews WHERE tenant = $1 AND name = $2",
            tenant.as_str(),
            name
        )
        .fetch_optional(&self.pool)
        .await?;
        row.map(CrewRow::into_record).transpose()
    }

    /// Every crew the tenant registered, by name.
    #[tracing::instrument(skip_all, err)]
    pub async fn list_crews(&self, tenant: &TenantId) -> StoreResult<Vec<CrewRecord>> {
        let rows = sqlx::query_as!(
            CrewRow,
            "SELECT name, spec, created_at, updated_at FROM crews WHERE tenant = $1 ORDER BY name",
            tenant.as_str()
        )
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter().map(CrewRow::into_record).collect()
    }

    /// Remove a crew; `false` if there was none. Runs keep their own snapshot of the spec.
    #[tracing::instrument(skip_all, fields(crew = %name), err)]
    pub async fn delete_crew(&self, tenant: &TenantId, name: &str, audit: &Audit) -> StoreResult<bool> {
        self.delete_audited(
            sqlx::query!("DELETE FROM crews WHERE tenant = $1 AND name = $2", tenant.as_str(), name),
            tenant,
            audit,
        )
        .await
    }
}
