//! Webhook endpoints (`/v1/webhooks`) and a kickoff's `webhooks`: checked here (patterns, the URL
//! and the egress guard, the server's signing secret), stored, and their deliveries listed and
//! retried. The secret of a registered endpoint is answered only when it is made (create, rotate).

use serde::Deserialize;
use serde_json::Value;
use uuid::Uuid;

use super::{ServiceError, ServiceResult, Services};
use crate::domain::kickoff::{every_event, KickoffWebhook, NewRun, RunWebhook};
use crate::domain::validate::{check_crew_name, check_text, parse_json, TextKind};
use crate::domain::webhook::DeliveryPage;
use crate::domain::webhook::{Delivery, WebhookEndpoint};
use crate::domain::WebhookId;
use crate::domain::{Caller, FieldError, RunId};
use crate::store::{Audit, EndpointPatch, NewEndpoint};
use crate::webhooks::signing::new_salt;
use crate::webhooks::{
    check_patterns, SigningKey, MAX_DESCRIPTION_BYTES, MAX_KICKOFF_WEBHOOKS, MAX_URL_BYTES,
};

/// The body of `POST /v1/webhooks`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateBody {
    url: String,
    #[serde(default = "every_event")]
    events: Vec<String>,
    #[serde(default)]
    crew: Option<String>,
    #[serde(default)]
    description: String,
}

/// The body of `PATCH /v1/webhooks/{id}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PatchBody {
    #[serde(default)]
    events: Option<Vec<String>>,
    #[serde(default)]
    enabled: Option<bool>,
    #[serde(default)]
    description: Option<String>,
}

/// An endpoint with the secret it signs with now (`whsec_...`), answered once.
#[derive(Debug)]
pub struct WithSecret {
    pub endpoint: WebhookEndpoint,
    pub secret: String,
}

impl Services {
    /// Register an endpoint; its secret is in the answer and nowhere else.
    pub async fn create_webhook(
        &self,
        caller: &Caller,
        body: Value,
        audit: &Audit,
    ) -> ServiceResult<WithSecret> {
        let key = self.signing_key()?;
        let body: CreateBody = parse_json(body).map_err(ServiceError::Invalid)?;
        let mut errors = Vec::new();
        if let Err(message) = self.check_webhook_url(&body.url).await {
            errors.push(FieldError::new("url", message));
        }
        if let Err(message) = check_patterns(&body.events) {
            errors.push(FieldError::new("events", message));
        }
        if let Some(Err(message)) = body.crew.as_deref().map(check_crew_name) {
            errors.push(FieldError::new("crew", message));
        }
        if let Err(error) = check_description(&body.description) {
            errors.push(error);
        }
        if !errors.is_empty() {
            return Err(ServiceError::Invalid(errors));
        }
        let salt = new_salt().map_err(|e| ServiceError::Internal(crate::store::StoreError::Corrupt(e)))?;
        let secret = key.endpoint_secret(Some(&salt)).to_whsec();
        let endpoint = NewEndpoint {
            id: Uuid::now_v7(),
            url: body.url,
            events: body.events,
            crew: body.crew,
            run_id: None,
            description: body.description,
            salt: Some(salt),
        };
        let endpoint = self.store.create_webhook(&caller.tenant, &endpoint, audit).await?;
        Ok(WithSecret { endpoint, secret })
    }

    /// Whether the server signs webhooks (has `AGENTD_WEBHOOK_SECRET`).
    pub fn webhooks_configured(&self) -> bool {
        self.webhook_settings.key.is_some()
    }

    /// Add an endpoint to a run that has not ended (an A2A push notification config, which
    /// `description` names): it receives the run's events from now on, signed with the server's
    /// secret as a kickoff's webhooks are.
    pub async fn add_run_webhook(
        &self,
        caller: &Caller,
        run: RunId,
        url: &str,
        description: &str,
        audit: &Audit,
    ) -> ServiceResult<WebhookEndpoint> {
        self.signing_key()?;
        let found = self.run(caller, run).await?;
        if found.status.is_terminal() {
            return Err(ServiceError::Conflict(format!(
                "the run has already ended ({})",
                found.status.as_str()
            )));
        }
        if let Err(message) = self.check_webhook_url(url).await {
            return Err(ServiceError::Invalid(vec![FieldError::new("url", message)]));
        }
        if self.store.list_webhooks(None, Some(run)).await?.len() >= MAX_KICKOFF_WEBHOOKS {
            let message = format!("a run has at most {MAX_KICKOFF_WEBHOOKS} webhooks");
            return Err(ServiceError::Invalid(vec![FieldError::new("url", message)]));
        }
        let endpoint = NewEndpoint {
            id: Uuid::now_v7(),
            url: url.to_owned(),
            events: every_event(),
            crew: None,
            run_id: Some(run),
            description: description.to_owned(),
            salt: None,
        };
        Ok(self.store.create_webhook(&found.tenant, &endpoint, audit).await?)
    }

    /// Registered endpoints, or those of a run's kickoff.
    pub async fn webhooks(&self, caller: &Caller, run: Option<RunId>) -> ServiceResult<Vec<WebhookEndpoint>> {
        self.signing_key()?;
        // A run the caller may not see has, to it, no webhooks (as a run that does not exist).
        if let Some(run) = run {
            let visible = self.store.run_tenant(run).await?.is_some_and(|tenant| caller.sees(&tenant));
            if !visible {
                return Ok(Vec::new());
            }
        }
        Ok(self.store.list_webhooks(caller.visible_tenant(), run).await?)
    }

    pub async fn webhook(&self, caller: &Caller, id: WebhookId) -> ServiceResult<WebhookEndpoint> {
        self.signing_key()?;
        self.visible_webhook(caller, id).await?;
        self.store.get_webhook(id).await?.ok_or_else(|| no_webhook(id))
    }

    /// Fail with "no such webhook" when endpoint `id` is another tenant's (or does not exist); an
    /// admin sees every tenant's, and whether it exists is then the use case's own answer.
    async fn visible_webhook(&self, caller: &Caller, id: WebhookId) -> ServiceResult<()> {
        if caller.is_admin() {
            return Ok(());
        }
        match self.store.webhook_tenant(id).await? {
            Some(tenant) if caller.sees(&tenant) => Ok(()),
            _ => Err(no_webhook(id)),
        }
    }

    /// Change an endpoint's events, description or whether it is enabled (enabling one that
    /// was disabled resumes its deliveries where they stopped).
    pub async fn update_webhook(
        &self,
        caller: &Caller,
        id: WebhookId,
        body: Value,
        audit: &Audit,
    ) -> ServiceResult<WebhookEndpoint> {
        self.signing_key()?;
        self.visible_webhook(caller, id).await?;
        let body: PatchBody = parse_json(body).map_err(ServiceError::Invalid)?;
        let mut errors = Vec::new();
        if let Some(Err(message)) = body.events.as_deref().map(check_patterns) {
            errors.push(FieldError::new("events", message));
        }
        if let Some(Err(error)) = body.description.as_deref().map(check_description) {
            errors.push(error);
        }
        if !errors.is_empty() {
            return Err(ServiceError::Invalid(errors));
        }
        let patch =
            EndpointPatch { events: body.events, enabled: body.enabled, description: body.description };
        self.store.update_webhook(id, &patch, audit).await?.ok_or_else(|| no_webhook(id))
    }

    pub async fn delete_webhook(&self, caller: &Caller, id: WebhookId, audit: &Audit) -> ServiceResult<()> {
        self.signing_key()?;
        self.visible_webhook(caller, id).await?;
        match self.store.delete_webhook(id, audit).await? {
            true => Ok(()),
            false => Err(no_webhook(id)),
        }
    }

    /// A new secret for a registered endpoint; the previous one keeps signing alongside for the
    /// configured grace period.
    pub async fn rotate_webhook_secret(
        &self,
        caller: &Caller,
        id: WebhookId,
        audit: &Audit,
    ) -> ServiceResult<WithSecret> {
        let key = self.signing_key()?;
        let endpoint = self.webhook(caller, id).await?;
        if endpoint.run_id.is_some() {
            return Err(ServiceError::Conflict(
                "a kickoff's webhook is signed with the server's secret (AGENTD_WEBHOOK_SECRET): it has no secret of its own to rotate".into(),
            ));
        }
        let salt = new_salt().map_err(|e| ServiceError::Internal(crate::store::StoreError::Corrupt(e)))?;
        let grace = self.webhook_settings.rotation_grace;
        let endpoint =
            self.store.rotate_webhook(id, &salt, grace, audit).await?.ok_or_else(|| no_webhook(id))?;
        Ok(WithSecret { endpoint, secret: key.endpoint_secret(Some(&salt)).to_whsec() })
    }

    /// An endpoint's deliveries, newest first.
    pub async fn deliveries(
        &self,
        caller: &Caller,
        id: WebhookId,
        before: Option<i64>,
        limit: i64,
    ) -> ServiceResult<DeliveryPage> {
        self.signing_key()?;
        self.visible_webhook(caller, id).await?;
        let page = self.store.list_deliveries(id, before, limit).await?;
        if page.deliveries.is_empty() {
            self.webhook(caller, id).await?;
        }
        Ok(page)
    }

    /// Send a delivery again (after the ones before it in its queue).
    pub async fn retry_delivery(
        &self,
        caller: &Caller,
        id: WebhookId,
        delivery: i64,
        audit: &Audit,
    ) -> ServiceResult<Delivery> {
        let endpoint = self.webhook(caller, id).await?;
        if !endpoint.enabled {
            return Err(ServiceError::Conflict(format!(
                "webhook {id} is disabled ({}): enable it first (PATCH {{\"enabled\": true}})",
                endpoint.disabled_reason.as_deref().unwrap_or("no reason given")
            )));
        }
        self.store
            .retry_delivery(id, delivery, audit)
            .await?
            .ok_or_else(|| ServiceError::NotFound(format!("webhook {id} has no delivery {delivery}")))
    }

    /// Check a kickoff's webhooks and give each run its own copies.
    pub(super) async fn attach_webhooks(
        &self,
        hooks: &[KickoffWebhook],
        runs: &mut [NewRun],
    ) -> ServiceResult<()> {
        if hooks.is_empty() {
            return Ok(());
        }
        let mut errors = Vec::new();
        if self.webhook_settings.key.is_none() {
            errors.push(FieldError::new(
                "webhooks",
                "webhooks are not configured on this server (AGENTD_WEBHOOK_SECRET)",
            ));
        }
        if hooks.len() > MAX_KICKOFF_WEBHOOKS {
            errors.push(FieldError::new("webhooks", format!("at most {MAX_KICKOFF_WEBHOOKS} webhooks")));
        }
        for (i, hook) in hooks.iter().enumerate() {
            if let Err(message) = self.check_webhook_url(&hook.url).await {
                errors.push(FieldError::new(format!("webhooks[{i}].url"), message));
            }
            if let Err(message) = check_patterns(&hook.events) {
                errors.push(FieldError::new(format!("webhooks[{i}].events"), message));
            }
        }
        if !errors.is_empty() {
            return Err(ServiceError::Invalid(errors));
        }
        for run in runs {
            run.webhooks = hooks
                .iter()
                .map(|hook| RunWebhook {
                    id: Uuid::now_v7(),
                    url: hook.url.clone(),
                    events: hook.events.clone(),
                })
                .collect();
        }
        Ok(())
    }

    /// A webhook URL: http(s), no credentials, on an address the egress guard allows.
    async fn check_webhook_url(&self, text: &str) -> Result<(), String> {
        if text.len() > MAX_URL_BYTES {
            return Err(format!("must be at most {MAX_URL_BYTES} bytes"));
        }
        let url = url::Url::parse(text).map_err(|e| format!("not a URL: {e}"))?;
        if !url.username().is_empty() || url.password().is_some() {
            return Err("must not carry credentials: receivers verify the signature instead".into());
        }
        let egress = &self.webhook_settings.egress;
        egress.check_url(&url).map_err(|e| format!("refused by the egress guard: {e}"))?;
        if let Some(url::Host::Domain(host)) = url.host() {
            egress.resolve_host(host).await.map_err(|e| format!("refused by the egress guard: {e}"))?;
        }
        Ok(())
    }

    fn signing_key(&self) -> ServiceResult<&SigningKey> {
        self.webhook_settings.key.as_ref().ok_or_else(|| {
            ServiceError::NotConfigured(
                "webhooks are not configured on this server: start it with AGENTD_WEBHOOK_SECRET (whsec_...)"
                    .into(),
            )
        })
    }
}

/// A description: at most [`MAX_DESCRIPTION_BYTES`], lines of text without other control
/// characters.
fn check_description(text: &str) -> Result<(), FieldError> {
    if text.len() > MAX_DESCRIPTION_BYTES {
        return Err(FieldError::new("description", format!("must be at most {MAX_DESCRIPTION_BYTES} bytes")));
    }
    check_text("description", text, TextKind::Lines)
}

fn no_webhook(id: WebhookId) -> ServiceError {
    ServiceError::NotFound(format!("no webhook {id}"))
}
