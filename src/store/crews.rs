//! Registered crews: specs stored by tenant and name, so kickoffs can say `"crew": "<name>"`.
//! Every store of a changed spec makes an immutable version (the database's trigger
//! `agentd_version_crew` numbers it, for every release's stores); aliases name versions and move
//! atomically.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use super::{decode, Audit, Store, StoreResult};
use crate::domain::crew::SERVING_ALIAS;
use crate::domain::crew::{CrewAlias, CrewRecord, CrewSelector, CrewVersion, UpsertOutcome, VersionPick};
use crate::domain::CrewSpec;
use crate::domain::TenantId;

struct CrewRow {
    name: String,
    spec: serde_json::Value,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
    version: i32,
    content_hash: String,
    aliases: serde_json::Value,
}

impl CrewRow {
    fn into_record(self) -> StoreResult<CrewRecord> {
        Ok(CrewRecord {
            spec: decode(self.spec, "crew_versions.spec")?,
            name: self.name,
            created_at: self.created_at,
            updated_at: self.updated_at,
            version: self.version,
            content_hash: self.content_hash,
            aliases: decode::<BTreeMap<String, i32>>(self.aliases, "crew_aliases")?,
        })
    }
}

struct VersionRow {
    crew: String,
    version: i32,
    spec: serde_json::Value,
    content_hash: String,
    stored_by: Option<String>,
    created_at: DateTime<Utc>,
    aliases: Vec<String>,
}

impl VersionRow {
    fn into_version(self) -> StoreResult<CrewVersion> {
        Ok(CrewVersion {
            spec: decode(self.spec, "crew_versions.spec")?,
            name: self.crew,
            version: self.version,
            content_hash: self.content_hash,
            stored_by: self.stored_by,
            created_at: self.created_at,
            aliases: self.aliases,
        })
    }
}

/// What `PUT /v1/crews/{name}/aliases/{alias}` did.
#[derive(Debug)]
pub enum AliasMove {
    /// The alias is new.
    Created(CrewAlias),
    /// The alias named `from` and now names the version asked for.
    Moved { alias: CrewAlias, from: i32 },
    /// The tenant has no crew of that name.
    NoCrew,
    /// The crew has no such version.
    NoVersion,
    /// The alias did not name `expected_version` (it names `current`, or nothing): nothing moved.
    Stale { current: Option<i32> },
}

impl Store {
    /// Store `spec` as the crew `spec.name`: its new version when the spec differs from its
    /// newest version's (the same content makes none). The record shows the newest version.
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
        // The trigger that makes the version reads who stores it from this transaction's setting.
        sqlx::query_scalar!("SELECT set_config('agentd.actor', $1, true)", audit.actor())
            .fetch_one(&mut *tx)
            .await?;
        // `xmax = 0` holds for a freshly inserted row and not for one the upsert updated.
        let inserted = sqlx::query_scalar!(
            r#"INSERT INTO crews (tenant, name, spec) VALUES ($3, $1, $2)
               ON CONFLICT (tenant, name) DO UPDATE
                  SET spec = EXCLUDED.spec,
                      updated_at = CASE WHEN crews.spec = EXCLUDED.spec THEN crews.updated_at ELSE now() END
               RETURNING (xmax = 0) AS "inserted!""#,
            spec.name,
            json,
            tenant.as_str()
        )
        .fetch_one(&mut *tx)
        .await?;
        let record = crew_records(&mut tx, tenant, Some(&spec.name), false)
            .await?
            .pop()
            .ok_or_else(|| super::StoreError::Corrupt(format!("crew '{}' has no version", spec.name)))?;
        audit.record_in(&mut tx, tenant, None).await?;
        tx.commit().await?;
        let outcome = if inserted { UpsertOutcome::Created } else { UpsertOutcome::Replaced };
        Ok((record, outcome))
    }

    /// The tenant's crew with this name, as its newest version.
    #[tracing::instrument(skip_all, fields(crew = %name), err)]
    pub async fn get_crew(&self, tenant: &TenantId, name: &str) -> StoreResult<Option<CrewRecord>> {
        let mut conn = self.pool.acquire().await?;
        Ok(crew_records(&mut conn, tenant, Some(name), false).await?.pop())
    }

    /// The tenant's crew with this name, as the version its bare name serves (its `production`
    /// alias's when it has one, else its newest).
    #[tracing::instrument(skip_all, fields(crew = %name), err)]
    pub async fn serving_crew(&self, tenant: &TenantId, name: &str) -> StoreResult<Option<CrewRecord>> {
        let mut conn = self.pool.acquire().await?;
        Ok(crew_records(&mut conn, tenant, Some(name), true).await?.pop())
    }

    /// Every crew the tenant registered, by name: each as its newest version, or as the version
    /// its bare name serves (its `production` alias's, when it has one) when `serving`.
    #[tracing::instrument(skip_all, err)]
    pub async fn list_crews(&self, tenant: &TenantId, serving: bool) -> StoreResult<Vec<CrewRecord>> {
        let mut conn = self.pool.acquire().await?;
        crew_records(&mut conn, tenant, None, serving).await
    }

    /// The version `selector` names, with its spec: `None` when the crew or the version (the
    /// alias) does not exist.
    #[tracing::instrument(skip_all, fields(crew = %selector), err)]
    pub async fn resolve_crew(
        &self,
        tenant: &TenantId,
        selector: &CrewSelector,
    ) -> StoreResult<Option<(i32, CrewSpec)>> {
        let (number, alias, newest) = match &selector.pick {
            VersionPick::Serving => (None, Some(SERVING_ALIAS), true),
            VersionPick::Latest => (None, None, true),
            VersionPick::Number(n) => (Some(*n), None, false),
            VersionPick::Alias(alias) => (None, Some(alias.as_str()), false),
        };
        let row = sqlx::query!(
            r#"SELECT v.version, v.spec FROM crew_versions AS v
                WHERE v.tenant = $1 AND v.crew = $2
                  AND v.version = COALESCE(
                        $3::int4,
                        (SELECT a.version FROM crew_aliases AS a
                          WHERE a.tenant = $1 AND a.crew = $2 AND a.alias = $4::text),
                        CASE WHEN $5::bool THEN (SELECT max(m.version) FROM crew_versions AS m
                                                  WHERE m.tenant = $1 AND m.crew = $2) END)"#,
            tenant.as_str(),
            selector.name,
            number,
            alias,
            newest
        )
        .fetch_optional(&self.pool)
        .await?;
        row.map(|row| Ok((row.version, decode(row.spec, "crew_versions.spec")?))).transpose()
    }

    /// A crew's versions, newest first (`None`: no such crew).
    #[tracing::instrument(skip_all, fields(crew = %name), err)]
    pub async fn crew_versions(
        &self,
        tenant: &TenantId,
        name: &str,
    ) -> StoreResult<Option<Vec<CrewVersion>>> {
        let rows = sqlx::query_as!(
            VersionRow,
            r#"SELECT v.crew, v.version, v.spec, v.content_hash, v.stored_by, v.created_at,
                      ARRAY(SELECT a.alias FROM crew_aliases AS a
                             WHERE a.tenant = v.tenant AND a.crew = v.crew AND a.version = v.version
                             ORDER BY a.alias) AS "aliases!"
                 FROM crew_versions AS v
                WHERE v.tenant = $1 AND v.crew = $2
                ORDER BY v.version DESC"#,
            tenant.as_str(),
            name
        )
        .fetch_all(&self.pool)
        .await?;
        if rows.is_empty() {
            return Ok(None);
        }
        rows.into_iter().map(VersionRow::into_version).collect::<StoreResult<_>>().map(Some)
    }

    /// One version of a crew.
    #[tracing::instrument(skip_all, fields(crew = %name, version), err)]
    pub async fn crew_version(
        &self,
        tenant: &TenantId,
        name: &str,
        version: i32,
    ) -> StoreResult<Option<CrewVersion>> {
        let row = sqlx::query_as!(
            VersionRow,
            r#"SELECT v.crew, v.version, v.spec, v.content_hash, v.stored_by, v.created_at,
                      ARRAY(SELECT a.alias FROM crew_aliases AS a
                             WHERE a.tenant = v.tenant AND a.crew = v.crew AND a.version = v.version
                             ORDER BY a.alias) AS "aliases!"
                 FROM crew_versions AS v
                WHERE v.tenant = $1 AND v.crew = $2 AND v.version = $3"#,
            tenant.as_str(),
            name,
            version
        )
        .fetch_optional(&self.pool)
        .await?;
        row.map(VersionRow::into_version).transpose()
    }

    /// A crew's aliases, by name (`None`: no such crew).
    #[tracing::instrument(skip_all, fields(crew = %name), err)]
    pub async fn crew_aliases(&self, tenant: &TenantId, name: &str) -> StoreResult<Option<Vec<CrewAlias>>> {
        let mut tx = self.pool.begin().await?;
        let exists = sqlx::query_scalar!(
            r#"SELECT EXISTS (SELECT 1 FROM crews WHERE tenant = $1 AND name = $2) AS "exists!""#,
            tenant.as_str(),
            name
        )
        .fetch_one(&mut *tx)
        .await?;
        if !exists {
            return Ok(None);
        }
        let aliases = sqlx::query_as!(
            CrewAlias,
            "SELECT alias, version, updated_by, created_at, updated_at FROM crew_aliases
              WHERE tenant = $1 AND crew = $2 ORDER BY alias",
            tenant.as_str(),
            name
        )
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Some(aliases))
    }

    /// Point `alias` of crew `name` at `version`, creating it, or moving it when it names
    /// `expected` (any version when `expected` is `None`), in one transaction that holds the
    /// alias's row: a kickoff sees the old version or the new, never neither.
    #[tracing::instrument(skip_all, fields(crew = %name, alias, version), err)]
    pub async fn move_alias(
        &self,
        tenant: &TenantId,
        name: &str,
        alias: &str,
        version: i32,
        expected: Option<i32>,
        audit: &Audit,
    ) -> StoreResult<AliasMove> {
        let mut tx = self.pool.begin().await?;
        // The crew's row, shared: a concurrent delete of the crew waits for this move.
        let newest = sqlx::query_scalar!(
            r#"SELECT (SELECT max(v.version) FROM crew_versions AS v WHERE v.tenant = c.tenant AND v.crew = c.name)
                 FROM crews AS c WHERE c.tenant = $1 AND c.name = $2 FOR SHARE"#,
            tenant.as_str(),
            name
        )
        .fetch_optional(&mut *tx)
        .await?;
        let Some(newest) = newest else {
            return Ok(AliasMove::NoCrew);
        };
        if newest.is_none_or(|newest| version > newest) {
            return Ok(AliasMove::NoVersion);
        }
        let current = sqlx::query_scalar!(
            "SELECT version FROM crew_aliases WHERE tenant = $1 AND crew = $2 AND alias = $3 FOR UPDATE",
            tenant.as_str(),
            name,
            alias
        )
        .fetch_optional(&mut *tx)
        .await?;
        if expected.is_some_and(|expected| current != Some(expected)) {
            return Ok(AliasMove::Stale { current });
        }
        let moved = sqlx::query_as!(
            CrewAlias,
            "INSERT INTO crew_aliases (tenant, crew, alias, version, updated_by) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (tenant, crew, alias) DO UPDATE
                SET version = EXCLUDED.version, updated_by = EXCLUDED.updated_by, updated_at = now()
             RETURNING alias, version, updated_by, created_at, updated_at",
            tenant.as_str(),
            name,
            alias,
            version,
            audit.actor()
        )
        .fetch_one(&mut *tx)
        .await?;
        audit.record_in(&mut tx, tenant, None).await?;
        tx.commit().await?;
        Ok(match current {
            None => AliasMove::Created(moved),
            Some(from) => AliasMove::Moved { alias: moved, from },
        })
    }

    /// Remove an alias; `false` if there was none.
    #[tracing::instrument(skip_all, fields(crew = %name, alias), err)]
    pub async fn delete_alias(
        &self,
        tenant: &TenantId,
        name: &str,
        alias: &str,
        audit: &Audit,
    ) -> StoreResult<bool> {
        self.delete_audited(
            sqlx::query!(
                "DELETE FROM crew_aliases WHERE tenant = $1 AND crew = $2 AND alias = $3",
                tenant.as_str(),
                name,
                alias
            ),
            tenant,
            audit,
        )
        .await
    }

    /// Remove a crew with its versions and aliases; `false` if there was none. Runs keep their
    /// own snapshot of the spec.
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

/// The tenant's crews (the one named `name`), each as its newest version, or as the version its
/// bare name serves when `serving`.
async fn crew_records(
    conn: &mut PgConnection,
    tenant: &TenantId,
    name: Option<&str>,
    serving: bool,
) -> StoreResult<Vec<CrewRecord>> {
    let rows = sqlx::query_as!(
        CrewRow,
        r#"SELECT c.name, v.spec, c.created_at, c.updated_at, v.version, v.content_hash,
                  COALESCE((SELECT jsonb_object_agg(a.alias, a.version) FROM crew_aliases AS a
                             WHERE a.tenant = c.tenant AND a.crew = c.name), '{}'::jsonb) AS "aliases!"
             FROM crews AS c
             JOIN crew_versions AS v
               ON v.tenant = c.tenant AND v.crew = c.name
              AND v.version = COALESCE(
                    CASE WHEN $3::bool THEN (SELECT a.version FROM crew_aliases AS a
                                              WHERE a.tenant = c.tenant AND a.crew = c.name AND a.alias = $4) END,
                    (SELECT max(m.version) FROM crew_versions AS m WHERE m.tenant = c.tenant AND m.crew = c.name))
            WHERE c.tenant = $1 AND ($2::text IS NULL OR c.name = $2)
            ORDER BY c.name"#,
        tenant.as_str(),
        name,
        serving,
        SERVING_ALIAS
    )
    .fetch_all(&mut *conn)
    .await?;
    rows.into_iter().map(CrewRow::into_record).collect()
}
