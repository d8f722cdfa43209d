//! Secrets as tools use them: the [`SecretSource`] they read values from when each request is
//! sent (so a rotation applies to the next call), the resolution of a crew's header and query
//! values, and the [`Redactor`] that takes the values back out of whatever the request returns
//! before it reaches the model or the journal.

use std::future::Future;
use std::pin::Pin;

use crate::domain::crew::ValueSource;

/// A secret's value, or an observation saying why not (never the value).
pub type SecretFuture<'a> = Pin<Box<dyn Future<Output = Result<String, String>> + Send + 'a>>;

/// Where secret values come from.
pub trait SecretSource: Send + Sync {
    fn resolve<'a>(&'a self, name: &'a str) -> SecretFuture<'a>;
}

/// Where each tenant's secrets come from: a run's tools read its own tenant's only.
pub trait SecretStore: Send + Sync {
    fn for_tenant(&self, tenant: &crate::domain::TenantId) -> std::sync::Arc<dyn SecretSource>;
}

/// No secrets: every reference fails (an engine without a vault, as in tests).
pub struct NoSecrets;

impl SecretStore for NoSecrets {
    fn for_tenant(&self, _tenant: &crate::domain::TenantId) -> std::sync::Arc<dyn SecretSource> {
        std::sync::Arc::new(NoSecrets)
    }
}

impl SecretSource for NoSecrets {
    fn resolve<'a>(&'a self, name: &'a str) -> SecretFuture<'a> {
        Box::pin(async move { Err(format!("secret '{name}' cannot be read: secrets are not configured")) })
    }
}

/// Resolve `values` (header or query entries) for one request; the secrets among them are added
/// to `redactor`.
pub async fn resolve(
    source: &dyn SecretSource,
    values: &[(String, ValueSource)],
    redactor: &mut Redactor,
) -> Result<Vec<(String, String)>, String> {
    let mut resolved = Vec::with_capacity(values.len());
    for (name, value) in values {
        let text = match value {
            ValueSource::Plain(text) => text.clone(),
            ValueSource::Secret(reference) => {
                let secret = source.resolve(&reference.secret).await?;
                redactor.add(&reference.secret, &secret);
                format!("{}{secret}", reference.prefix)
            }
        };
        resolved.push((name.clone(), text));
    }
    Ok(resolved)
}

/// The secret values one request used, to be removed from what it returns.
#[derive(Default)]
pub struct Redactor {
    /// (marker, value): the value as sent and as a URL would carry it.
    values: Vec<(String, String)>,
}

impl Redactor {
    pub fn add(&mut self, name: &str, value: &str) {
        if value.is_empty() {
            return;
        }
        let marker = format!("[secret:{name}]");
        let encoded: String = url::form_urlencoded::byte_serialize(value.as_bytes()).collect();
        let percent = encoded.replace('+', "%20");
        for form in [value.to_owned(), encoded, percent] {
            if !self.values.iter().any(|(_, known)| *known == form) {
                self.values.push((marker.clone(), form));
            }
        }
        // Longest first, so that a value containing another is replaced whole.
        self.values.sort_by_key(|(_, value)| std::cmp::Reverse(value.len()));
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// `text` without the values.
    pub fn redact(&self, text: &mut String) {
        for (marker, value) in &self.values {
            if text.contains(value.as_str()) {
                *text = text.replace(value.as_str(), marker);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redaction_removes_the_value_as_sent_and_as_a_url_carries_it() {
        let mut redactor = Redactor::default();
        redactor.add("token", "a b/c");
        let mut text = "got a b/c, a+b%2Fc and a%20b%2Fc".to_owned();
        redactor.redact(&mut text);
        assert!(!text.contains("b/c") && !text.contains("b%2Fc"), "{text}");
        assert!(text.starts_with("got [secret:token], [secret:token]"), "{text}");
    }
}
