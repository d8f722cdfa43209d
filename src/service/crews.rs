//! Registered crews: specs stored by tenant and name (validated as a kickoff would validate them), listed,
//! read and deleted. Runs already started keep their own snapshot of a crew.

use serde_json::Value;

use super::{invalid, ServiceError, ServiceResult, Services};
use crate::domain::crew::Protocol;
use crate::domain::crew::{CrewRecord, UpsertOutcome};
use crate::domain::crewai::{import_crewai, CrewImport, ImportWarning, Imported};
use crate::domain::validate::validate_crew;
use crate::domain::{Caller, CrewSpec};
use crate::store::Audit;

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
        Ok(self.store.list_crews(&caller.tenant).await?)
    }

    pub async fn crew(&self, caller: &Caller, name: &str) -> ServiceResult<CrewRecord> {
        self.store.get_crew(&caller.tenant, name).await?.ok_or_else(|| no_crew(name))
    }

    /// The caller's tenant's crews published through `protocol`, by name.
    pub async fn published_crews(
        &self,
        caller: &Caller,
        protocol: Protocol,
    ) -> ServiceResult<Vec<CrewRecord>> {
        let mut crews = self.store.list_crews(&caller.tenant).await?;
        crews.retain(|crew| crew.spec.publish.includes(protocol));
        Ok(crews)
    }

    /// The caller's tenant's crew `name` if it is published through `protocol` (one that is not
    /// is as missing as one that does not exist).
    pub async fn published_crew(
        &self,
        caller: &Caller,
        name: &str,
        protocol: Protocol,
    ) -> ServiceResult<CrewRecord> {
        match self.store.get_crew(&caller.tenant, name).await? {
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
