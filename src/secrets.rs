//! Stored secrets: the key that seals them (AES-256-GCM, from `AGENTD_SECRETS_KEY`), and the
//! [`Vault`] that stores, lists, removes and resolves them. A value exists in the clear only here
//! and in the request it is sent with: the store holds it sealed, the API never answers it, and
//! tools redact it from what they return (see [`crate::tools::secrets`]).

use std::fmt;
use std::sync::Arc;

use base64::Engine as _;
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, NONCE_LEN};
use ring::rand::{SecureRandom, SystemRandom};
use sha2::{Digest, Sha256};

use crate::store::{Audit, SealedSecret, Store, StoreError};

use crate::domain::crew::UpsertOutcome;

use crate::domain::secret::SecretInfo;
use crate::domain::TenantId;
use crate::tools::secrets::{SecretFuture, SecretSource, SecretStore};

/// The longest secret value, in bytes.
pub const MAX_SECRET_BYTES: usize = 16 * 1024;

/// The key secrets are sealed with: 32 bytes, given as base64 or 64 hex digits.
pub struct SecretsKey {
    key: LessSafeKey,
    /// A digest of the key, stored with each secret so that another key is recognised.
    id: String,
}

impl fmt::Debug for SecretsKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecretsKey").field("id", &self.id).finish_non_exhaustive()
    }
}

/// Why a secret could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("no secret named '{0}'")]
    Missing(String),
    #[error("secret '{0}' was sealed with another key than this server's AGENTD_SECRETS_KEY")]
    OtherKey(String),
    #[error("secret '{0}' cannot be decrypted (the stored value is damaged)")]
    Damaged(String),
    #[error("secrets are not configured on this server (set AGENTD_SECRETS_KEY)")]
    NotConfigured,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl SecretsKey {
    /// Read a key: 32 bytes as base64 (standard or URL-safe, padded or not) or 64 hex digits.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let bytes = decode_hex(text)
            .or_else(|| base64::engine::general_purpose::STANDARD.decode(text).ok())
            .or_else(|| base64::engine::general_purpose::STANDARD_NO_PAD.decode(text).ok())
            .or_else(|| base64::engine::general_purpose::URL_SAFE.decode(text).ok())
            .or_else(|| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(text).ok())
            .ok_or("must be 32 bytes as base64 or 64 hex digits (e.g. `openssl rand -base64 32`)")?;
        if bytes.len() != 32 {
            return Err(format!(
                "must be 32 bytes (AES-256), not {} (e.g. `openssl rand -base64 32`)",
                bytes.len()
            ));
        }
        let unbound = UnboundKey::new(&AES_256_GCM, &bytes).map_err(|_| "not an AES-256 key".to_owned())?;
        let digest = Sha256::digest([b"agentd secrets key id\0".as_slice(), &bytes].concat());
        let id = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        Ok(Self { key: LessSafeKey::new(unbound), id })
    }

    /// Seal `value` as the secret `name` (the name is the associated data: a sealed value moved to
    /// another name does not open).
    pub fn seal(&self, name: &str, value: &str) -> Result<SealedSecret, String> {
        let mut nonce = [0u8; NONCE_LEN];
        SystemRandom::new().fill(&mut nonce).map_err(|_| "no randomness for a nonce".to_owned())?;
        let mut ciphertext = value.as_bytes().to_vec();
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(name.as_bytes()),
                &mut ciphertext,
            )
            .map_err(|_| "sealing failed".to_owned())?;
        Ok(SealedSecret { key_id: self.id.clone(), nonce: nonce.to_vec(), ciphertext })
    }

    /// The value of the secret `name`.
    pub fn open(&self, name: &str, sealed: &SealedSecret) -> Result<String, SecretError> {
        if sealed.key_id != self.id {
            return Err(SecretError::OtherKey(name.to_owned()));
        }
        let damaged = || SecretError::Damaged(name.to_owned());
        let nonce = Nonce::try_assume_unique_for_key(&sealed.nonce).map_err(|_| damaged())?;
        let mut bytes = sealed.ciphertext.clone();
        let plain =
            self.key.open_in_place(nonce, Aad::from(name.as_bytes()), &mut bytes).map_err(|_| damaged())?;
        String::from_utf8(plain.to_vec()).map_err(|_| damaged())
    }
}

fn decode_hex(text: &str) -> Option<Vec<u8>> {
    if text.len() != 64 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok()).collect()
}

/// Secrets over the store, sealed with the server's key (none: every use says so).
#[derive(Clone)]
pub struct Vault {
    store: Store,
    key: Option<Arc<SecretsKey>>,
}

impl Vault {
    pub fn new(store: Store, key: Option<Arc<SecretsKey>>) -> Self {
        Self { store, key }
    }

    /// Is a key configured?
    pub fn is_configured(&self) -> bool {
        self.key.is_some()
    }

    fn key(&self) -> Result<&SecretsKey, SecretError> {
        self.key.as_deref().ok_or(SecretError::NotConfigured)
    }

    /// Create or replace the tenant's secret `name`.
    pub async fn put(
        &self,
        tenant: &TenantId,
        name: &str,
        value: &str,
        audit: &Audit,
    ) -> Result<(SecretInfo, UpsertOutcome), SecretError> {
        let sealed = self.key()?.seal(name, value).map_err(StoreError::Corrupt)?;
        Ok(self.store.put_secret(tenant, name, &sealed, audit).await?)
    }

    /// Every secret's name and times, of the tenant.
    pub async fn list(&self, tenant: &TenantId) -> Result<Vec<SecretInfo>, SecretError> {
        self.key()?;
        Ok(self.store.list_secrets(tenant).await?)
    }

    /// Remove the tenant's secret; `false` if there was none.
    pub async fn delete(&self, tenant: &TenantId, name: &str, audit: &Audit) -> Result<bool, SecretError> {
        self.key()?;
        Ok(self.store.delete_secret(tenant, name, audit).await?)
    }

    /// Those of `names` that the tenant does not have.
    pub async fn missing(&self, tenant: &TenantId, names: &[String]) -> Result<Vec<String>, SecretError> {
        self.key()?;
        Ok(self.store.missing_secrets(tenant, names).await?)
    }

    /// The value of the tenant's `name`, read now (a rotation applies to the next use). Another
    /// tenant's secret of that name is, to this one, missing.
    pub async fn value(&self, tenant: &TenantId, name: &str) -> Result<String, SecretError> {
        let key = self.key()?;
        let sealed = self
            .store
            .get_secret(tenant, name)
            .await?
            .ok_or_else(|| SecretError::Missing(name.to_owned()))?;
        key.open(name, &sealed)
    }
}

/// One tenant's secrets, as its runs' tools read them.
struct TenantSecrets {
    vault: Vault,
    tenant: TenantId,
}

impl SecretStore for Vault {
    fn for_tenant(&self, tenant: &TenantId) -> Arc<dyn SecretSource> {
        Arc::new(TenantSecrets { vault: self.clone(), tenant: tenant.to_owned() })
    }
}

impl SecretSource for TenantSecrets {
    fn resolve<'a>(&'a self, name: &'a str) -> SecretFuture<'a> {
        Box::pin(async move {
            self.vault.value(&self.tenant, name).await.map_err(|error| match error {
                // The database's own words stay in the log; the model is told what it can act on.
                SecretError::Store(error) => {
                    tracing::warn!(secret = %name, %error, "a secret could not be read");
                    format!("secret '{name}' could not be read (the database is unavailable)")
                }
                other => other.to_string(),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";

    #[test]
    fn a_sealed_value_opens_under_its_name_and_key_only() {
        let key = SecretsKey::parse(KEY).expect("key");
        let sealed = key.seal("token", "s3cr3t").expect("seal");
        assert!(!sealed.ciphertext.windows(6).any(|w| w == b"s3cr3t"));
        assert_eq!(key.open("token", &sealed).expect("open"), "s3cr3t");
        assert!(matches!(key.open("other", &sealed), Err(SecretError::Damaged(_))));
        let other = SecretsKey::parse(&"ab".repeat(32)).expect("hex key");
        assert!(matches!(other.open("token", &sealed), Err(SecretError::OtherKey(_))));
        let mut damaged = sealed.clone();
        damaged.ciphertext[0] ^= 1;
        assert!(matches!(key.open("token", &damaged), Err(SecretError::Damaged(_))));
        assert_ne!(key.seal("token", "s3cr3t").expect("seal").nonce, sealed.nonce, "a fresh nonce each time");
    }

    #[test]
    fn keys_must_be_32_bytes() {
        assert!(SecretsKey::parse("c2hvcnQ=").expect_err("short").contains("not 5"));
        assert!(SecretsKey::parse("not a key!").is_err());
        assert!(SecretsKey::parse(&"0f".repeat(32)).is_ok());
        assert!(!format!("{:?}", SecretsKey::parse(KEY).expect("key")).contains(KEY));
    }
}
