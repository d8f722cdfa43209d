//! Approval before a tool runs (`POST /v1/runs/{id}/tool-calls/{tool_call_id}/approval`): a
//! reviewer approves a waiting call (optionally with edited arguments, checked against the tool's
//! schema) or rejects it with a reason. The run continues once every waiting call is decided.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::{invalid, no_run, ServiceError, ServiceResult, Services};
use crate::domain::crew::McpToolRef;
use crate::domain::journal::{Approval, ToolCallOutcome};
use crate::domain::schema::CompiledSchema;
use crate::domain::validate::parse_json;
use crate::domain::{Caller, FieldError, Run, RunId};
use crate::store::{Audit, DecideOutcome, PendingCall};
use crate::tools::builtin_tools;
use crate::tools::mcp::{is_discovery_key, McpToolInfo};

/// The body of a decision.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DecisionBody {
    approve: bool,
    /// Approving: the arguments to run with instead of the model's.
    #[serde(default)]
    arguments: Option<Map<String, Value>>,
    /// Rejecting: why (the model is told).
    #[serde(default)]
    reason: Option<String>,
}

impl Services {
    /// Decide on the waiting call `call_id` of run `id`.
    pub async fn decide_tool_call(
        &self,
        caller: &Caller,
        id: RunId,
        call_id: &str,
        body: Value,
        audit: &Audit,
    ) -> ServiceResult<Run> {
        self.visible_run(caller, id).await?;
        let body: DecisionBody = parse_json(body).map_err(ServiceError::Invalid)?;
        let decision = match (body.approve, body.arguments) {
            (false, Some(_)) => return Err(invalid("arguments", "only an approval may give arguments")),
            (false, None) => {
                let reason = body.reason.map(|r| r.trim().to_owned()).filter(|r| !r.is_empty());
                Approval::Rejected { reason }
            }
            (true, arguments) => {
                if body.reason.is_some() {
                    return Err(invalid("reason", "only a rejection gives a reason"));
                }
                let call =
                    self.store.call_for_review(id, call_id).await?.ok_or_else(|| no_call(id, call_id))?;
                if call.approval != Some(Approval::Pending) {
                    return Err(not_waiting(call_id));
                }
                if let Some(arguments) = &arguments {
                    self.check_arguments(id, &call, &Value::Object(arguments.clone())).await?;
                }
                Approval::Approved { arguments: arguments.map(Value::Object) }
            }
        };
        match self.store.decide_tool_call(id, call_id, &decision, audit).await? {
            DecideOutcome::NotFound => match self.store.get_run(id).await? {
                None => Err(no_run(id)),
                Some(_) => Err(no_call(id, call_id)),
            },
            DecideOutcome::NotAwaiting => Err(not_waiting(call_id)),
            DecideOutcome::Decided(run) => Ok(*run),
        }
    }

    /// Edited arguments must satisfy the tool's schema: a crew tool's, a built-in's, or the one
    /// its MCP server declared (as the run journaled it).
    async fn check_arguments(&self, id: RunId, call: &PendingCall, arguments: &Value) -> ServiceResult<()> {
        let schema = if let Some(tool) = call.crew.tools.iter().find(|t| t.name == call.tool) {
            Some(tool.parameters.clone())
        } else if let Some(tool) = builtin_tools().into_iter().find(|t| t.name == call.tool) {
            Some(tool.parameters)
        } else if let Some(McpToolRef::One { server, tool }) = McpToolRef::parse(&call.tool) {
            // The listing of the server's tools that succeeded (after any that failed).
            let calls = self.store.list_tool_calls(id).await?;
            let listed =
                calls.into_iter().filter(|c| is_discovery_key(server, &c.id)).find_map(|c| match c.outcome {
                    Some(ToolCallOutcome::Succeeded { result, .. }) => Some(result),
                    _ => None,
                });
            let tools: Vec<McpToolInfo> =
                listed.and_then(|l| serde_json::from_str(&l).ok()).unwrap_or_default();
            tools.into_iter().find(|t| t.name == tool).map(|t| t.input_schema)
        } else {
            None
        };
        let Some(schema) = schema else { return Ok(()) };
        let Ok(compiled) = CompiledSchema::compile(&schema) else { return Ok(()) };
        let errors: Vec<FieldError> =
            compiled.validate(arguments).into_iter().map(|e| FieldError::new("arguments", e)).collect();
        match errors.is_empty() {
            true => Ok(()),
            false => Err(ServiceError::Invalid(errors)),
        }
    }
}

fn no_call(id: RunId, call_id: &str) -> ServiceError {
    ServiceError::NotFound(format!("run {id} has no tool call '{call_id}'"))
}

fn not_waiting(call_id: &str) -> ServiceError {
    ServiceError::Conflict(format!("tool call '{call_id}' is not awaiting approval"))
}
