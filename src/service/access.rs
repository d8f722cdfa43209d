//! Tenants and API keys: creating them (admin), listing and revoking keys, and knowing the caller
//! of a request from the key it presents.
//!
//! A key is `agd_` and 43 characters of base64url (32 random bytes); only its SHA-256 digest and
//! its first [`PREFIX_LEN`] characters are stored. A presented key is looked up by its prefix and
//! compared by digest in constant time. What a key stands for is cached for [`KEY_CACHE_TTL`]
//! on each replica, so a revocation takes effect everywhere within about a second.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use base64::Engine as _;
use chrono::{DateTime, Utc};
use ring::rand::{SecureRandom, SystemRandom};
use serde::Deserialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use uuid::Uuid;

use super::{invalid, ServiceError, ServiceResult, Services};
use crate::domain::audit::AuditRecord;
use crate::domain::kickoff::NewRun;
use crate::domain::tenant::check_tenant_name;
use crate::domain::tenant::{KeyRecord, TenantRecord};
use crate::domain::validate::{check_text, parse_json, TextKind};
use crate::domain::KeyId;
use crate::domain::TenantId;
use crate::domain::{Caller, FieldError, KeyEnd, QueueFull, QuotaPatch, Quotas, Scope, Scopes};
use crate::store::{Audit, AuditFilter, NewKey, Outcome, Store, StoreError, TenantLoad};

/// How long a replica trusts what it read about a key (and whether any key exists).
pub const KEY_CACHE_TTL: Duration = Duration::from_secs(1);
/// The characters of a key kept to find it (`agd_` and 8 more; not secret).
pub const PREFIX_LEN: usize = 12;
/// Keys a replica remembers at once (a flood of made-up keys cannot grow it beyond this).
const KEY_CACHE_CAPACITY: usize = 10_000;
const KEY_PREFIX: &str = "agd_";

/// What a key's digest stood for (a caller, or none) and when that was read.
type Remembered = (Option<Caller>, Instant);

/// What a replica remembers of keys, by digest.
#[derive(Default)]
pub struct KeyCache {
    keys: Mutex<HashMap<[u8; 32], Remembered>>,
    any: Mutex<Option<(bool, Instant)>>,
}

/// The body of `POST /v1/keys`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyBody {
    tenant: String,
    name: String,
    scopes: Vec<String>,
    #[serde(default)]
    expires_at: Option<DateTime<Utc>>,
}

/// What a replica knows of tenants' quotas, for [`KEY_CACHE_TTL`] at a time.
#[derive(Default)]
pub struct QuotaCache {
    tenants: Mutex<HashMap<TenantId, (Quotas, Instant)>>,
}

impl QuotaCache {
    fn cached(&self, tenant: &TenantId) -> Option<Quotas> {
        let tenants = self.tenants.lock().unwrap_or_else(|e| e.into_inner());
        tenants.get(tenant).filter(|(_, at)| at.elapsed() < KEY_CACHE_TTL).map(|(quotas, _)| *quotas)
    }

    fn remember(&self, tenant: &TenantId, quotas: Quotas) {
        let mut tenants = self.tenants.lock().unwrap_or_else(|e| e.into_inner());
        if tenants.len() >= KEY_CACHE_CAPACITY {
            tenants.clear();
        }
        tenants.insert(tenant.clone(), (quotas, Instant::now()));
    }

    fn forget(&self, tenant: &TenantId) {
        self.tenants.lock().unwrap_or_else(|e| e.into_inner()).remove(tenant);
    }
}

/// How long a kickoff refused for a full queue is told to wait (the queue drains as runs start).
const QUEUE_FULL_RETRY: Duration = Duration::from_secs(5);

/// A new key: its record and, this once, its text.
#[derive(Debug)]
pub struct CreatedKey {
    pub record: KeyRecord,
    pub key: String,
}

/// A tenant body's `name` and its other fields; `not_object` and `missing` say what is wrong
/// when it is not a JSON object or has no name.
fn take_name(body: Value, not_object: &str, missing: &str) -> ServiceResult<(String, Map<String, Value>)> {
    let Value::Object(mut fields) = body else {
        return Err(invalid("", not_object));
    };
    match fields.remove("name") {
        Some(Value::String(name)) => Ok((name, fields)),
        Some(_) => Err(invalid("name", "must be a string")),
        None => Err(invalid("name", missing)),
    }
}

impl Services {
    /// The caller a presented key stands for; `None` for a key that is unknown, revoked or expired.
    pub async fn authenticate(&self, token: &str) -> ServiceResult<Option<Caller>> {
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some(caller) = self.keys.cached(&digest) {
            return Ok(caller);
        }
        let caller = match token.get(..PREFIX_LEN).filter(|_| token.starts_with(KEY_PREFIX)) {
            Some(prefix) => {
                let candidates = self.store.key_candidates(prefix).await?;
                let now = Utc::now();
                candidates
                    .into_iter()
                    .filter(|c| c.expires_at.is_none_or(|at| at > now))
                    .find(|c| bool::from(c.digest.as_slice().ct_eq(&digest)))
                    .map(|c| {
                        let store = self.store.clone();
                        let id = c.id;
                        tokio::spawn(async move {
                            if let Err(error) = store.touch_key(KeyId(id)).await {
                                tracing::debug!(%error, key = %id, "could not note a key's use");
                            }
                        });
                        Caller {
                            key_id: Some(KeyId(c.id)),
                            tenant: c.tenant,
                            scopes: parse_scopes(&c.scopes),
                        }
                    })
            }
            None => None,
        };
        self.keys.remember(digest, caller.clone());
        Ok(caller)
    }

    /// Is any key stored? (Cached like keys.)
    pub async fn keys_exist(&self) -> ServiceResult<bool> {
        if let Some(any) = self.keys.cached_any() {
            return Ok(any);
        }
        let any = self.store.has_keys().await?;
        self.keys.remember_any(any);
        Ok(any)
    }

    /// Create a key for a tenant (`POST /v1/keys`, admin).
    pub async fn create_key(&self, body: Value, audit: &Audit) -> ServiceResult<CreatedKey> {
        let body: KeyBody = parse_json(body).map_err(ServiceError::Invalid)?;
        let mut errors = Vec::new();
        let scopes: Vec<Scope> = body
            .scopes
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                s.parse().map_err(|e| errors.push(FieldError::new(format!("scopes[{i}]"), e))).ok()
            })
            .collect();
        if body.scopes.is_empty() {
            errors.push(FieldError::new(
                "scopes",
                "give at least one of read, kickoff, approve, manage, admin",
            ));
        }
        if body.name.trim().is_empty() || body.name.len() > 200 {
            errors.push(FieldError::new("name", "must be 1 to 200 characters"));
        } else if let Err(error) = check_text("name", &body.name, TextKind::Line) {
            errors.push(error);
        }
        if body.expires_at.is_some_and(|at| at <= Utc::now()) {
            errors.push(FieldError::new("expires_at", "must be in the future"));
        }
        let tenant = TenantId::from(body.tenant.as_str());
        if let Err(message) = check_tenant_name(&body.tenant) {
            errors.push(FieldError::new("tenant", message));
        } else if self.store.get_tenant(&tenant).await?.is_none() {
            errors.push(FieldError::new(
                "tenant",
                format!("no tenant named '{}' (POST /v1/tenants)", body.tenant),
            ));
        }
        if !errors.is_empty() {
            return Err(ServiceError::Invalid(errors));
        }
        let created =
            issue_key(&self.store, &tenant, body.name.trim(), &scopes, body.expires_at, audit).await?;
        self.keys.forget_any();
        Ok(created)
    }

    /// Live keys: every tenant's for an admin.
    pub async fn keys(&self, caller: &Caller) -> ServiceResult<Vec<KeyRecord>> {
        Ok(self.store.list_keys(caller.visible_tenant()).await?)
    }

    /// Revoke a key (on every replica within [`KEY_CACHE_TTL`]): its streams here end at once,
    /// on other replicas at their next check of keys.
    pub async fn revoke_key(&self, caller: &Caller, id: KeyId, audit: &Audit) -> ServiceResult<()> {
        match self.store.revoke_key(id, caller.visible_tenant(), audit).await? {
            true => {
                self.keys.forget_all();
                self.key_watch.end(id, KeyEnd::KeyRevoked);
                Ok(())
            }
            false => Err(ServiceError::NotFound(format!("no key with id {id}"))),
        }
    }

    /// Create a tenant, with quotas if the body sets any (`POST /v1/tenants`, admin).
    pub async fn create_tenant(&self, body: Value, audit: &Audit) -> ServiceResult<TenantRecord> {
        // A name and, optionally, the quotas a PATCH sets.
        let (name, fields) = take_name(body, "the body must be a JSON object with a 'name'", "is required")?;
        check_tenant_name(&name).map_err(|message| invalid("name", message))?;
        let patch: QuotaPatch = parse_json(Value::Object(fields)).map_err(ServiceError::Invalid)?;
        patch.check().map_err(|(field, message)| invalid(field, message))?;
        let quotas = patch.apply(Quotas::default());
        self.store
            .create_tenant(&TenantId::from(name.as_str()), &quotas, audit)
            .await?
            .ok_or_else(|| ServiceError::Conflict(format!("a tenant named '{name}' exists")))
    }

    /// Change a tenant's quotas (`PATCH /v1/tenants/{name}`, admin); every replica applies them
    /// to kickoffs within [`KEY_CACHE_TTL`], and to claims at once.
    pub async fn update_tenant(
        &self,
        name: &TenantId,
        body: Value,
        audit: &Audit,
    ) -> ServiceResult<TenantRecord> {
        if !body.is_object() {
            return Err(invalid("", "the body must be a JSON object of quotas"));
        }
        let patch: QuotaPatch = parse_json(body).map_err(ServiceError::Invalid)?;
        patch.check().map_err(|(field, message)| invalid(field, message))?;
        let updated = self.store.update_tenant_quotas(name, &patch, audit).await?;
        self.quotas.forget(name);
        updated.ok_or_else(|| ServiceError::NotFound(format!("no tenant named '{name}'")))
    }

    /// Change the quotas of the tenant the body names (`PATCH /v1/tenants`: `{"name", ...}`),
    /// as [`Services::update_tenant`] does.
    pub async fn update_named_tenant(&self, body: Value, audit: &Audit) -> ServiceResult<TenantRecord> {
        let (name, fields) = take_name(
            body,
            "the body must be a JSON object with a 'name' and the quotas to change",
            "is required (or PATCH /v1/tenants/{name})",
        )?;
        self.update_tenant(&TenantId::from(name), Value::Object(fields), audit).await
    }

    pub async fn tenants(&self) -> ServiceResult<Vec<TenantRecord>> {
        Ok(self.store.list_tenants().await?)
    }

    /// A tenant, with what it has running and queued and has spent today.
    pub async fn tenant(&self, name: &TenantId) -> ServiceResult<(TenantRecord, TenantLoad)> {
        let record = self
            .store
            .get_tenant(name)
            .await?
            .ok_or_else(|| ServiceError::NotFound(format!("no tenant named '{name}'")))?;
        Ok((record, self.store.tenant_load(name).await?))
    }

    /// A tenant's quotas as this replica knows them (read at most once a second).
    pub(super) async fn quotas_of(&self, tenant: &TenantId) -> ServiceResult<Quotas> {
        if let Some(quotas) = self.quotas.cached(tenant) {
            return Ok(quotas);
        }
        let quotas = self.store.get_tenant(tenant).await?.map(|t| t.quotas).unwrap_or_default();
        self.quotas.remember(tenant, quotas);
        Ok(quotas)
    }

    /// Admit `runs` (one kickoff's, of `tenant`) under the tenant's quotas: refused (429 with when
    /// to retry) once the tenant has spent today's token or cost cap; under a `max_queued`, the
    /// runs carry it, and the transaction that stores them keeps it (a full queue is then
    /// [`queue_full`]). A tenant without such quotas costs no query beyond a cached read of its
    /// quotas.
    pub(super) async fn admit(&self, tenant: &TenantId, runs: &mut [NewRun]) -> ServiceResult<()> {
        let quotas = self.quotas_of(tenant).await?;
        if !quotas.binds_kickoffs() {
            return Ok(());
        }
        for run in runs.iter_mut() {
            run.max_queued = quotas.max_queued;
        }
        if quotas.caps_spend() {
            let (tokens, cost_usd) = self.store.spent_today(tenant).await?;
            let over = match (quotas.max_tokens_per_day, quotas.max_cost_usd_per_day) {
                (Some(max), _) if tokens >= max => {
                    Some(format!("{tokens} tokens today, max_tokens_per_day = {max}"))
                }
                (_, Some(max)) if cost_usd >= max => {
                    Some(format!("${cost_usd:.6} today, max_cost_usd_per_day = ${max}"))
                }
                _ => None,
            };
            if let Some(spent) = over {
                return Err(ServiceError::Quota {
                    message: format!("tenant '{tenant}' has spent its daily cap: {spent} (UTC day)"),
                    retry_after: until_utc_midnight(Utc::now()),
                });
            }
        }
        Ok(())
    }

    /// Record an audited request that changed nothing (refused or failed).
    pub async fn record_refusal(&self, audit: &Audit, outcome: Outcome) -> ServiceResult<()> {
        Ok(self.store.record_refusal(audit, outcome).await?)
    }
}

/// A kickoff its tenant's `max_queued` refused: a 429 saying how full the queue is.
pub(super) fn queue_full(full: &QueueFull) -> ServiceError {
    ServiceError::Quota { message: full.to_string(), retry_after: QUEUE_FULL_RETRY }
}

/// The time from `now` to the next midnight, UTC (when daily caps start again).
fn until_utc_midnight(now: DateTime<Utc>) -> Duration {
    let tomorrow = now.date_naive().succ_opt().and_then(|d| d.and_hms_opt(0, 0, 0));
    tomorrow.map_or(Duration::from_secs(3600), |midnight| {
        (midnight.and_utc() - now).to_std().unwrap_or(Duration::from_secs(1))
    })
}

/// Make a key for `tenant` (which must exist) and store its digest: the use case behind
/// `POST /v1/keys` and `agentd keys create`.
pub async fn issue_key(
    store: &Store,
    tenant: &TenantId,
    name: &str,
    scopes: &[Scope],
    expires_at: Option<DateTime<Utc>>,
    audit: &Audit,
) -> ServiceResult<CreatedKey> {
    let mut random = [0u8; 32];
    SystemRandom::new()
        .fill(&mut random)
        .map_err(|_| ServiceError::Internal(StoreError::Corrupt("no randomness for a key".into())))?;
    let key = format!("{KEY_PREFIX}{}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(random));
    let mut names: Vec<String> = scopes.iter().map(|s| s.as_str().to_owned()).collect();
    names.sort();
    names.dedup();
    let new = NewKey {
        id: Uuid::now_v7(),
        tenant: tenant.to_owned(),
        name: name.to_owned(),
        prefix: key[..PREFIX_LEN].to_owned(),
        digest: Sha256::digest(key.as_bytes()).to_vec(),
        scopes: names,
        expires_at,
    };
    let record = store.create_key(&new, audit).await?;
    Ok(CreatedKey { record, key })
}

/// Stored scope names as a set (a name this version does not know grants nothing).
fn parse_scopes(names: &[String]) -> Scopes {
    names.iter().filter_map(|name| name.parse().ok()).collect()
}

impl KeyCache {
    fn cached(&self, digest: &[u8; 32]) -> Option<Option<Caller>> {
        let keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        keys.get(digest).filter(|(_, at)| at.elapsed() < KEY_CACHE_TTL).map(|(caller, _)| caller.clone())
    }

    fn remember(&self, digest: [u8; 32], caller: Option<Caller>) {
        let mut keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        if keys.len() >= KEY_CACHE_CAPACITY {
            keys.retain(|_, (_, at)| at.elapsed() < KEY_CACHE_TTL);
            if keys.len() >= KEY_CACHE_CAPACITY {
                keys.clear();
            }
        }
        keys.insert(digest, (caller, Instant::now()));
    }

    fn forget_all(&self) {
        self.keys.lock().unwrap_or_else(|e| e.into_inner()).clear();
        self.forget_any();
    }

    fn cached_any(&self) -> Option<bool> {
        let any = self.any.lock().unwrap_or_else(|e| e.into_inner());
        any.filter(|(_, at)| at.elapsed() < KEY_CACHE_TTL).map(|(any, _)| any)
    }

    fn remember_any(&self, any: bool) {
        *self.any.lock().unwrap_or_else(|e| e.into_inner()) = Some((any, Instant::now()));
    }

    fn forget_any(&self) {
        *self.any.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

impl Services {
    /// Audit records (`GET /v1/audit`): every tenant's for an admin, else the caller's tenant's
    /// only (a filter naming another tenant finds nothing).
    pub async fn audit(&self, caller: &Caller, mut filter: AuditFilter) -> ServiceResult<Vec<AuditRecord>> {
        if let Some(own) = caller.visible_tenant() {
            if filter.tenant.as_ref().is_some_and(|asked| asked != own) {
                return Ok(Vec::new());
            }
            filter.tenant = Some(own.to_owned());
        }
        Ok(self.store.list_audit(&filter).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::until_utc_midnight;
    use chrono::{TimeZone, Utc};
    use std::time::Duration;

    #[test]
    fn daily_caps_start_again_at_utc_midnight() {
        let now = Utc.with_ymd_and_hms(2026, 12, 31, 23, 59, 30).unwrap();
        assert_eq!(until_utc_midnight(now), Duration::from_secs(30));
        let morning = Utc.with_ymd_and_hms(2026, 3, 1, 6, 0, 0).unwrap();
        assert_eq!(until_utc_midnight(morning), Duration::from_secs(18 * 3600));
    }
}
