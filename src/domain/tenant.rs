//! Tenants, scopes and the caller: who is asking, on whose behalf, and what they may do.
//!
//! A tenant owns runs, crews, secrets, webhooks and idempotency keys; a caller acts for one
//! tenant with the scopes of its key. Another tenant's resource is, to a caller, one that does not
//! exist. `admin` is every scope, over every tenant.

use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::ids::{KeyId, TenantId};

/// The tenant that owned everything before tenants existed, and that `AGENTD_API_KEYS` act for.
pub const DEFAULT_TENANT: &str = "default";

/// [`DEFAULT_TENANT`] as a tenant id.
pub static DEFAULT_TENANT_ID: std::sync::LazyLock<TenantId> =
    std::sync::LazyLock::new(|| TenantId::new(DEFAULT_TENANT));

/// What a key may do.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Runs, events, streams, `/wait`, crews and secret names.
    Read,
    /// Kickoffs, batches, cancelling and deleting runs.
    Kickoff,
    /// Deciding tool-call approvals and `/resume`.
    Approve,
    /// Crews, secrets and webhooks.
    Manage,
    /// Tenants, keys, and every tenant's resources.
    Admin,
}

impl Scope {
    pub const ALL: [Scope; 5] = [Scope::Read, Scope::Kickoff, Scope::Approve, Scope::Manage, Scope::Admin];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Kickoff => "kickoff",
            Scope::Approve => "approve",
            Scope::Manage => "manage",
            Scope::Admin => "admin",
        }
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Scope {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Scope::ALL
            .into_iter()
            .find(|scope| scope.as_str() == s)
            .ok_or_else(|| format!("unknown scope '{s}': use read, kickoff, approve, manage or admin"))
    }
}

/// A set of scopes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Scopes(u8);

impl Scopes {
    pub fn all() -> Self {
        Scope::ALL.into_iter().collect()
    }

    pub fn contains(self, scope: Scope) -> bool {
        self.0 & scope.bit() != 0
    }

    pub fn iter(self) -> impl Iterator<Item = Scope> {
        Scope::ALL.into_iter().filter(move |s| self.contains(*s))
    }
}

impl FromIterator<Scope> for Scopes {
    fn from_iter<I: IntoIterator<Item = Scope>>(iter: I) -> Self {
        Scopes(iter.into_iter().fold(0, |bits, scope| bits | scope.bit()))
    }
}

/// Who is asking: the key (none for `AGENTD_API_KEYS` and an open API), its tenant and scopes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub key_id: Option<KeyId>,
    pub tenant: TenantId,
    pub scopes: Scopes,
}

impl Caller {
    /// An admin of `default`: a key of `AGENTD_API_KEYS`, or anyone when the API is open.
    pub fn operator() -> Self {
        Self { key_id: None, tenant: DEFAULT_TENANT_ID.clone(), scopes: Scopes::all() }
    }

    /// May it do what `scope` covers? (`admin` covers everything.)
    pub fn may(&self, scope: Scope) -> bool {
        self.scopes.contains(scope) || self.scopes.contains(Scope::Admin)
    }

    pub fn is_admin(&self) -> bool {
        self.scopes.contains(Scope::Admin)
    }

    /// May it see a resource of `tenant`?
    pub fn sees(&self, tenant: &TenantId) -> bool {
        self.is_admin() || self.tenant == *tenant
    }

    /// The tenant its lists are limited to (`None`: an admin sees every tenant's).
    pub fn visible_tenant(&self) -> Option<&TenantId> {
        (!self.is_admin()).then_some(&self.tenant)
    }
}

/// Why a stored key no longer stands for its caller: what a stream opened with it says as it
/// closes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum KeyEnd {
    /// The key was revoked (`DELETE /v1/keys/{id}`).
    KeyRevoked,
    /// The key's `expires_at` passed.
    KeyExpired,
    /// The key's tenant no longer exists.
    TenantDeleted,
}

impl KeyEnd {
    pub fn as_str(self) -> &'static str {
        match self {
            KeyEnd::KeyRevoked => "key_revoked",
            KeyEnd::KeyExpired => "key_expired",
            KeyEnd::TenantDeleted => "tenant_deleted",
        }
    }

    /// The sentence a closing stream says it with.
    pub fn detail(self) -> &'static str {
        match self {
            KeyEnd::KeyRevoked => "the API key this stream was opened with was revoked",
            KeyEnd::KeyExpired => "the API key this stream was opened with has expired",
            KeyEnd::TenantDeleted => "the tenant of the API key this stream was opened with was deleted",
        }
    }
}

/// A tenant's quotas; `null` is no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Quotas {
    /// Runs executing at once across the cluster; more stay queued until one ends.
    #[schema(minimum = 0, maximum = 2147483647)]
    pub max_running: Option<u32>,
    /// Runs queued at once; a kickoff beyond it is refused (429 `/problems/quota`).
    #[schema(minimum = 0, maximum = 2147483647)]
    pub max_queued: Option<u32>,
    /// Prompt and completion tokens per UTC day: a kickoff once it is spent is refused (429), a
    /// run that crosses it fails with `error.kind = "budget"`.
    #[schema(minimum = 0, maximum = 9223372036854775807_i64)]
    pub max_tokens_per_day: Option<u64>,
    /// US dollars per UTC day (from the providers' prices), enforced as `max_tokens_per_day`.
    #[schema(minimum = 0.0)]
    pub max_cost_usd_per_day: Option<f64>,
}

impl Quotas {
    /// Has it a daily spend cap (which the journal then keeps a daily ledger for)?
    pub fn caps_spend(&self) -> bool {
        self.max_tokens_per_day.is_some() || self.max_cost_usd_per_day.is_some()
    }

    /// Does any quota bind at kickoff?
    pub fn binds_kickoffs(&self) -> bool {
        self.max_queued.is_some() || self.caps_spend()
    }
}

/// A kickoff refused by its tenant's `max_queued`: the tenant's queued (and waiting) runs when it
/// was counted, under the tenant's lock, in the transaction that would have stored it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "tenant '{tenant}' has {queued} runs queued and may queue {max} (max_queued); {adding} more would exceed it"
)]
pub struct QueueFull {
    pub tenant: TenantId,
    pub queued: i64,
    pub max: u32,
    /// The runs the kickoff would have queued.
    pub adding: usize,
}

/// The largest `max_running` and `max_queued` (the database keeps them as `integer`).
pub const MAX_COUNT: u32 = i32::MAX as u32;
/// The largest `max_tokens_per_day` (the database keeps it as `bigint`).
pub const MAX_TOKENS: u64 = i64::MAX as u64;

/// A change of quotas: an absent field stays as it is, `null` lifts the limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuotaPatch {
    #[serde(default, deserialize_with = "present")]
    pub max_running: Option<Option<u32>>,
    #[serde(default, deserialize_with = "present")]
    pub max_queued: Option<Option<u32>>,
    #[serde(default, deserialize_with = "present")]
    pub max_tokens_per_day: Option<Option<u64>>,
    #[serde(default, deserialize_with = "present")]
    pub max_cost_usd_per_day: Option<Option<f64>>,
}

impl QuotaPatch {
    /// `quotas` with this change made.
    pub fn apply(self, quotas: Quotas) -> Quotas {
        Quotas {
            max_running: self.max_running.unwrap_or(quotas.max_running),
            max_queued: self.max_queued.unwrap_or(quotas.max_queued),
            max_tokens_per_day: self.max_tokens_per_day.unwrap_or(quotas.max_tokens_per_day),
            max_cost_usd_per_day: self.max_cost_usd_per_day.unwrap_or(quotas.max_cost_usd_per_day),
        }
    }

    /// Each quota must fit what the database keeps: counts up to 2^31 - 1, tokens up to 2^63 - 1,
    /// dollars a finite amount, none negative. The first field at fault and why.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        let counts = [("max_running", self.max_running), ("max_queued", self.max_queued)];
        for (field, value) in counts {
            if let Some(Some(n)) = value.filter(|v| v.is_some_and(|n| n > MAX_COUNT)) {
                return Err((field, format!("must be at most {MAX_COUNT}, not {n}")));
            }
        }
        if let Some(Some(n)) = self.max_tokens_per_day.filter(|v| v.is_some_and(|n| n > MAX_TOKENS)) {
            return Err(("max_tokens_per_day", format!("must be at most {MAX_TOKENS}, not {n}")));
        }
        match self.max_cost_usd_per_day {
            Some(Some(cap)) if !cap.is_finite() || cap < 0.0 => {
                Err(("max_cost_usd_per_day", format!("must be a non-negative amount, not {cap}")))
            }
            _ => Ok(()),
        }
    }
}

/// A field that is present (its value, `null` included), as distinct from one that is absent.
fn present<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

/// A tenant's name: 1 to 63 lowercase letters, digits, `-` and `_`, starting with a letter or
/// digit (the database checks the same).
pub fn check_tenant_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    let rest_ok = chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    match first_ok && rest_ok && name.len() <= 63 {
        true => Ok(()),
        false => Err(format!(
            "'{name}' is not a tenant name: 1 to 63 lowercase letters, digits, '-' and '_', starting with a letter or digit"
        )),
    }
}

/// A tenant and its quotas.
#[derive(Debug, Clone, PartialEq)]
pub struct TenantRecord {
    pub name: String,
    pub created_at: DateTime<Utc>,
    pub quotas: Quotas,
}

/// An API key as it may be shown: never its text.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyRecord {
    pub id: KeyId,
    pub tenant: TenantId,
    pub name: String,
    /// The key's first characters, to tell keys apart (not secret).
    pub prefix: String,
    pub scopes: Vec<String>,
    pub created_at: DateTime<Utc>,
    pub last_used_at: Option<DateTime<Utc>>,
    pub expires_at: Option<DateTime<Utc>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admin_covers_every_scope_and_every_tenant() {
        let reader = Caller { key_id: None, tenant: "a".into(), scopes: [Scope::Read].into_iter().collect() };
        assert!(reader.may(Scope::Read) && !reader.may(Scope::Kickoff) && !reader.may(Scope::Admin));
        let (a, b) = (TenantId::new("a"), TenantId::new("b"));
        assert!(reader.sees(&a) && !reader.sees(&b));
        assert_eq!(reader.visible_tenant(), Some(&a));
        let admin = Caller { scopes: [Scope::Admin].into_iter().collect(), ..reader };
        assert!(Scope::ALL.iter().all(|s| admin.may(*s)) && admin.sees(&b));
        assert_eq!(admin.visible_tenant(), None);
        assert_eq!(Scopes::all().iter().count(), 5);
        assert_eq!("manage".parse::<Scope>(), Ok(Scope::Manage));
        assert!("root".parse::<Scope>().is_err());
    }

    #[test]
    fn a_quota_patch_keeps_what_it_omits_and_lifts_what_it_nulls() {
        let before = Quotas { max_running: Some(2), max_queued: Some(10), ..Quotas::default() };
        let patch: QuotaPatch =
            serde_json::from_value(serde_json::json!({"max_queued": null, "max_tokens_per_day": 500}))
                .unwrap();
        let after = patch.apply(before);
        assert_eq!(after.max_running, Some(2));
        assert_eq!(after.max_queued, None);
        assert_eq!(after.max_tokens_per_day, Some(500));
        assert!(after.caps_spend() && after.binds_kickoffs());
        assert!(serde_json::from_value::<QuotaPatch>(serde_json::json!({"max_runing": 1})).is_err());
        assert!(serde_json::from_value::<QuotaPatch>(serde_json::json!({"max_running": -1})).is_err());
        let negative: QuotaPatch =
            serde_json::from_value(serde_json::json!({"max_cost_usd_per_day": -1.0})).unwrap();
        assert_eq!(negative.check().map_err(|e| e.0), Err("max_cost_usd_per_day"));
        let huge: QuotaPatch =
            serde_json::from_value(serde_json::json!({"max_queued": 3_000_000_000u64})).unwrap();
        assert_eq!(huge.check().map_err(|e| e.0), Err("max_queued"));
        let fits: QuotaPatch =
            serde_json::from_value(serde_json::json!({"max_running": 2147483647})).unwrap();
        assert!(fits.check().is_ok());
    }

    #[test]
    fn tenant_names_are_checked() {
        for good in ["default", "team-a", "t_1", "9"] {
            assert!(check_tenant_name(good).is_ok(), "{good}");
        }
        for bad in ["", "Team", "-a", "a b", "a/b", &"x".repeat(64)] {
            assert!(check_tenant_name(bad).is_err(), "{bad}");
        }
    }
}
