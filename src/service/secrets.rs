//! Stored secrets (`PUT/GET/DELETE /v1/secrets`): values go in and never come out; crews
//! reference them by name, and a kickoff whose crew references a missing secret is refused.

use serde::Deserialize;
use serde_json::Value;

use super::{invalid, ServiceError, ServiceResult, Services};
use crate::domain::crew::SecretRef;
use crate::domain::crew::UpsertOutcome;
use crate::domain::secret::SecretInfo;
use crate::domain::validate::{check_crew_name, parse_json};
use crate::domain::TenantId;
use crate::domain::{Caller, CrewSpec, FieldError};
use crate::secrets::{SecretError, MAX_SECRET_BYTES};
use crate::store::Audit;

/// The body of `PUT /v1/secrets/{name}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SecretBody {
    value: String,
}

impl Services {
    /// Create or replace the secret `name` with the body's `value`.
    pub async fn put_secret(
        &self,
        caller: &Caller,
        name: &str,
        body: Value,
        audit: &Audit,
    ) -> ServiceResult<(SecretInfo, UpsertOutcome)> {
        self.secrets_configured()?;
        let body: SecretBody = parse_json(body).map_err(ServiceError::Invalid)?;
        if body.value.is_empty() {
            return Err(invalid("value", "must not be empty"));
        }
        if body.value.len() > MAX_SECRET_BYTES {
            return Err(invalid("value", format!("must be at most {MAX_SECRET_BYTES} bytes")));
        }
        Ok(self.vault.put(&caller.tenant, name, &body.value, audit).await?)
    }

    /// Every secret's name and times (never a value).
    pub async fn secrets(&self, caller: &Caller) -> ServiceResult<Vec<SecretInfo>> {
        Ok(self.vault.list(&caller.tenant).await?)
    }

    pub async fn delete_secret(&self, caller: &Caller, name: &str, audit: &Audit) -> ServiceResult<()> {
        match self.vault.delete(&caller.tenant, name, audit).await? {
            true => Ok(()),
            false => Err(ServiceError::NotFound(format!("no secret named '{name}'"))),
        }
    }

    /// A crew may reference secrets only where they are configured (checked when it is
    /// registered and at kickoff).
    pub(super) fn check_secrets_usable(&self, crew: &CrewSpec, prefix: &str) -> ServiceResult<()> {
        self.usable(&crew.secret_refs(), prefix)
    }

    fn usable(&self, refs: &[(String, &SecretRef)], prefix: &str) -> ServiceResult<()> {
        if refs.is_empty() || self.vault.is_configured() {
            return Ok(());
        }
        let errors = refs
            .iter()
            .map(|(path, _)| {
                FieldError::new(
                    format!("{prefix}{path}"),
                    "secrets are not configured on this server (AGENTD_SECRETS_KEY)",
                )
            })
            .collect();
        Err(ServiceError::Invalid(errors))
    }

    /// Every secret the crew of a kickoff references must exist.
    /// The tenant's secrets, that is: another tenant's secret of that name is missing here.
    pub(super) async fn check_secrets_exist(
        &self,
        tenant: &TenantId,
        crew: &CrewSpec,
        prefix: &str,
    ) -> ServiceResult<()> {
        let refs = crew.secret_refs();
        self.usable(&refs, prefix)?;
        if refs.is_empty() {
            return Ok(());
        }
        let mut names: Vec<String> = refs.iter().map(|(_, r)| r.secret.clone()).collect();
        names.sort();
        names.dedup();
        let missing = self.vault.missing(tenant, &names).await?;
        let errors: Vec<FieldError> = refs
            .into_iter()
            .filter(|(_, r)| missing.contains(&r.secret))
            .map(|(path, r)| {
                FieldError::new(format!("{prefix}{path}"), format!("no secret named '{}'", r.secret))
            })
            .collect();
        match errors.is_empty() {
            true => Ok(()),
            false => Err(ServiceError::Invalid(errors)),
        }
    }

    fn secrets_configured(&self) -> ServiceResult<()> {
        match self.vault.is_configured() {
            true => Ok(()),
            false => Err(SecretError::NotConfigured.into()),
        }
    }
}

impl From<SecretError> for ServiceError {
    fn from(error: SecretError) -> Self {
        match error {
            SecretError::Missing(name) => ServiceError::NotFound(format!("no secret named '{name}'")),
            SecretError::NotConfigured => ServiceError::NotConfigured(
                "secrets are not configured on this server: start it with AGENTD_SECRETS_KEY".into(),
            ),
            SecretError::Store(error) => error.into(),
            other => ServiceError::Internal(crate::store::StoreError::Corrupt(other.to_string())),
        }
    }
}

/// A secret's name: as a crew's.
pub fn check_secret_name(name: &str) -> Result<(), String> {
    check_crew_name(name)
}
