//! Registered crews: specs stored by tenant and name (validated as a kickoff would validate them), listed,
//! read and deleted. Runs already started keep their own snapshot of a crew.

use serde_json::Value;

use super::{invalid, ServiceError, ServiceResult, Services};
use crate::domain::crew::Protocol;
use crate::domain::crew::{check_alias_name, CrewAlias, CrewSelector, CrewVersion, VersionPick};
use crate::domain::crew::{CrewRecord, UpsertOutcome};
use crate::domain::crewai::{import_crewai, CrewImport, ImportWarning, Imported};
use crate::domain::validate::validate_crew;
use crate::domain::TenantId;
use crate::domain::{Caller, CrewSpec};
use crate::store::{AliasMove, Audit};

impl Services {
    /// Register `body` as the crew `name` (its `name` field may be left out), replacing any
    /// crew of that name.
    pub async fn register_crew(
        &self,
        caller: &Caller,
        name: &str,
        body: Value,
        audit: &Audit,
    ) -> ServiceResult<(CrewRecord, UpsertOutcome)> {
        let Value::Object(mut fields) = body else {
            return Err(invalid("", "a crew spec must be a JSON object"));
        };
        match fields.get("name") {
            None => {
                fields.insert("name".into(), Value::String(name.to_owned()));
            }
            Some(given) if given.as_str() != Some(name) => {
                let message = format!("must equal the crew name in the path ('{name}') or be left out");
                return Err(invalid("name", message));
            }
            Some(_) => {}
        }
        let spec = CrewSpec::from_json(Value::Object(fields)).map_err(ServiceError::Invalid)?;
        validate_crew(&spec, &self.validation).map_err(ServiceError::Invalid)?;
        self.check_secrets_usable(&spec, "")?;
        Ok(self.store.upsert_crew(&caller.tenant, &spec, audit).await?)
    }

    /// Store a CrewAI project as the crew `import.name` (replacing any crew of that name): its
    /// record, whether it is new, and what the crew does not do as CrewAI would.
    pub async fn import_crew(
        &self,
        caller: &Caller,
        import: &CrewImport,
        audit: &Audit,
    ) -> ServiceResult<(CrewRecord, UpsertOutcome, Vec<ImportWarning>)> {
        let Imported { spec, warnings } =
            import_crewai(import, &self.validation).map_err(ServiceError::Invalid)?;
        self.check_secrets_usable(&spec, "mapping.")?;
        let (record, outcome) = self.store.upsert_crew(&caller.tenant, &spec, audit).await?;
        Ok((record, outcome, warnings))
    }

    /// Every crew the caller's tenant registered, by name.
    pub async fn crews(&self, caller: &Caller) -> ServiceResult<Vec<CrewRecord>> {
        Ok(self.store.list_crews(&caller.tenant, false).await?)
    }

    /// The caller's tenant's crew `name`, as its newest version.
    pub async fn crew(&self, caller: &Caller, name: &str) -> ServiceResult<CrewRecord> {
        self.store.get_crew(&caller.tenant, name).await?.ok_or_else(|| no_crew(name))
    }

    /// The version of one of `tenant`'s crews that `selector` names, and its spec.
    pub async fn resolve_named_crew(
        &self,
        tenant: &TenantId,
        selector: &CrewSelector,
    ) -> ServiceResult<(i32, CrewSpec)> {
        if let Some(found) = self.store.resolve_crew(tenant, selector).await? {
            return Ok(found);
        }
        let name = &selector.name;
        // Which part is missing: the crew, or the version its reference names.
        if matches!(selector.pick, VersionPick::Serving | VersionPick::Latest)
            || self.store.get_crew(tenant, name).await?.is_none()
        {
            return Err(no_crew(name));
        }
        Err(ServiceError::NotFound(match &selector.pick {
            VersionPick::Number(n) => format!("crew '{name}' has no version {n}"),
            VersionPick::Alias(alias) => format!("crew '{name}' has no alias '{alias}'"),
            VersionPick::Serving | VersionPick::Latest => format!("no registered crew named '{name}'"),
        }))
    }

    /// A crew's versions, newest first.
    pub async fn crew_versions(&self, caller: &Caller, name: &str) -> ServiceResult<Vec<CrewVersion>> {
        self.store.crew_versions(&caller.tenant, name).await?.ok_or_else(|| no_crew(name))
    }

    /// One version of a crew.
    pub async fn crew_version(
        &self,
        caller: &Caller,
        name: &str,
        version: i32,
    ) -> ServiceResult<CrewVersion> {
        match self.store.crew_version(&caller.tenant, name, version).await? {
            Some(found) => Ok(found),
            None => {
                self.crew(caller, name).await?;
                Err(ServiceError::NotFound(format!("crew '{name}' has no version {version}")))
            }
        }
    }

    /// A crew's aliases, by name.
    pub async fn crew_aliases(&self, caller: &Caller, name: &str) -> ServiceResult<Vec<CrewAlias>> {
        self.store.crew_aliases(&caller.tenant, name).await?.ok_or_else(|| no_crew(name))
    }

    /// Point `alias` at `version` (moving it only from `expected`, when given): the alias, and
    /// the version it named before (`None`: it is new).
    pub async fn move_alias(
        &self,
        caller: &Caller,
        name: &str,
        alias: &str,
        version: i32,
        expected: Option<i32>,
        audit: &Audit,
    ) -> ServiceResult<(CrewAlias, Option<i32>)> {
        check_alias_name(alias).map_err(|message| invalid("alias", message))?;
        if version < 1 {
            return Err(invalid("version", "must be at least 1"));
        }
        match self.store.move_alias(&caller.tenant, name, alias, version, expected, audit).await? {
            AliasMove::Created(alias) => Ok((alias, None)),
            AliasMove::Moved { alias, from } => Ok((alias, Some(from))),
            AliasMove::NoCrew => Err(no_crew(name)),
            AliasMove::NoVersion => {
                Err(invalid("version", format!("crew '{name}' has no version {version}")))
            }
            AliasMove::Stale { current } => Err(ServiceError::Conflict(format!(
                "alias '{alias}' names {}, not version {} (expected_version): nothing moved",
                current.map_or_else(|| "no version".to_owned(), |v| format!("version {v}")),
                expected.unwrap_or_default()
            ))),
        }
    }

    /// Remove an alias; kickoffs naming it fail from now on (a bare name falls back to the newest
    /// version when `production` goes).
    pub async fn delete_alias(
        &self,
        caller: &Caller,
        name: &str,
        alias: &str,
        audit: &Audit,
    ) -> ServiceResult<()> {
        match self.store.delete_alias(&caller.tenant, name, alias, audit).await? {
            true => Ok(()),
            false => {
                self.crew(caller, name).await?;
                Err(ServiceError::NotFound(format!("crew '{name}' has no alias '{alias}'")))
            }
        }
    }

    /// The caller's tenant's crews published through `protocol`, by name.
    pub async fn published_crews(
        &self,
        caller: &Caller,
        protocol: Protocol,
    ) -> ServiceResult<Vec<CrewRecord>> {
        let mut crews = self.store.list_crews(&caller.tenant, true).await?;
        crews.retain(|crew| crew.spec.publish.includes(protocol));
        Ok(crews)
    }

    /// The caller's tenant's crew `name` if it is published through `protocol` (one that is not
    /// is as missing as one that does not exist), as the version its bare name serves (its
    /// `production` alias's when it has one): the one a protocol's kickoff runs.
    pub async fn published_crew(
        &self,
        caller: &Caller,
        name: &str,
        protocol: Protocol,
    ) -> ServiceResult<CrewRecord> {
        match self.store.serving_crew(&caller.tenant, name).await? {
            Some(crew) if crew.spec.publish.includes(protocol) => Ok(crew),
            _ => Err(ServiceError::NotFound(format!(
                "no crew named '{name}' is published through {}",
                protocol.as_str()
            ))),
        }
    }

    pub async fn delete_crew(&self, caller: &Caller, name: &str, audit: &Audit) -> ServiceResult<()> {
        match self.store.delete_crew(&caller.tenant, name, audit).await? {
            true => Ok(()),
            false => Err(no_crew(name)),
        }
    }
}

fn no_crew(name: &str) -> ServiceError {
    ServiceError::NotFound(format!("no registered crew named '{name}'"))
}
