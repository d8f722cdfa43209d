//! A run's MCP servers: one client per server (sessions live as long as the execution), the
//! tools each offers, discovered when a task first needs the server and journaled with the run
//! (a resumed run offers exactly what it offered before, without asking again), and the toolbox
//! entries agents' `<server>__<tool>` and `<server>__*` names become.
//!
//! A listing is a tool call of the runtime (`mcp:<server>`, `{"method": "tools/list"}`), run by
//! the effects layer like every call: a listing that fails (a server the egress guard refuses, one
//! out of reach) is a failed tool call of the run with the reason, announced as `tool.started`
//! and `tool.failed`, and the next task that needs the server lists again.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use serde_json::json;

use super::effects::ToolEffect;
use super::journal::{Snapshot, Step, ToolCallEnd, ToolCallOutcome, ToolCallStart};
use super::toolbox::ToolEntry;
use super::{Context, EngineError};
use crate::domain::crew::{CrewSpec, McpServerSpec, McpToolRef, Process, TaskSpec, MCP_SEPARATOR};
use crate::domain::event::{ToolFailed, ToolStarted};
use crate::domain::schema::CompiledSchema;
use crate::domain::validate::check_tool_name;
use crate::domain::EventData;
use crate::metrics::Metrics;
use crate::tools::http::Outbound;
use crate::tools::mcp::client::McpClient;
use crate::tools::mcp::{discovery_key, is_discovery_key, McpListing, McpTool, McpToolInfo, UnavailableTool};
use crate::tools::secrets::SecretSource;
use crate::tools::{Tool, ToolInfo};

/// What is known of a server's tools.
#[derive(Clone)]
enum Listing {
    Listed(Arc<Vec<Discovered>>),
    /// Discovery failed (not journaled: the next task tries again).
    Failed(String),
}

struct Discovered {
    info: McpToolInfo,
    /// `info.input_schema` compiled; a schema agentd cannot compile checks only for an object
    /// (the server validates the rest).
    schema: CompiledSchema,
}

/// The MCP servers of one execution of a run.
pub(super) struct McpRun {
    servers: HashMap<String, (McpServerSpec, Arc<McpClient>)>,
    catalog: Mutex<HashMap<String, Listing>>,
    /// The listings of each server that failed in the run (journaled), to key the next one.
    failed: Mutex<HashMap<String, u32>>,
    metrics: Arc<Metrics>,
    max_text_bytes: usize,
}

impl McpRun {
    /// The crew's servers (no connection yet) and what the journal already holds of their tools.
    pub fn new(
        crew: &CrewSpec,
        outbound: &Arc<Outbound>,
        secrets: &Arc<dyn SecretSource>,
        metrics: Arc<Metrics>,
        snapshot: &Snapshot,
    ) -> Self {
        let mut servers = HashMap::new();
        let mut catalog = HashMap::new();
        let mut failed = HashMap::new();
        for spec in &crew.mcp_servers {
            let Ok(url) = reqwest::Url::parse(&spec.url) else { continue };
            let headers = spec.headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            let timeout = std::time::Duration::from_millis(spec.timeout_ms);
            let client = McpClient::new(url, headers, timeout, outbound.clone(), secrets.clone());
            servers.insert(spec.name.clone(), (spec.clone(), Arc::new(client)));
            let listings = snapshot.tool_calls.iter().filter(|call| is_discovery_key(&spec.name, &call.id));
            for outcome in listings.filter_map(|call| call.outcome.as_ref()) {
                match listed(outcome) {
                    Some(tools) => {
                        catalog.insert(spec.name.clone(), Listing::Listed(Arc::new(compiled(tools))));
                    }
                    None => *failed.entry(spec.name.clone()).or_default() += 1,
                }
            }
        }
        let max_text_bytes = outbound.max_response_bytes;
        Self { servers, catalog: Mutex::new(catalog), failed: Mutex::new(failed), metrics, max_text_bytes }
    }

    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    fn listing(&self, server: &str) -> Option<Listing> {
        self.catalog.lock().unwrap_or_else(|p| p.into_inner()).get(server).cloned()
    }

    /// The servers `task` may reach: those its tools (or its agent's) name, and, where it can
    /// delegate (hierarchical process, or an agent allowed to), those of every agent.
    pub fn servers_for<'c>(crew: &'c CrewSpec, task: &'c TaskSpec) -> BTreeSet<&'c str> {
        let agent = task.agent.as_deref().and_then(|name| crew.agent(name));
        let delegates = crew.process == Process::Hierarchical || agent.is_some_and(|a| a.allow_delegation);
        let mut names: Vec<&String> = task.tools.iter().flatten().collect();
        match (delegates, agent) {
            (true, _) => names.extend(crew.agents.iter().flat_map(|a| &a.tools)),
            (false, Some(agent)) if task.tools.is_none() => names.extend(&agent.tools),
            (false, _) => {}
        }
        names.into_iter().filter_map(|name| McpToolRef::parse(name)).map(McpToolRef::server).collect()
    }

    /// Make sure the tools of `server` are known: from the journal, else by asking the server
    /// through the effects layer (the listing, a tool call `mcp:<server>`, joins `pending`; its
    /// start may be committed while it goes on, as an idempotent call's). A server out of reach
    /// leaves a failed call with the reason and its tools unavailable to this task (each call of
    /// one says why); the next task asks again.
    pub async fn ensure(
        &self,
        ctx: &Context<'_>,
        server: &str,
        task: &str,
        agent: &str,
        pending: &mut Step,
    ) -> Result<(), EngineError> {
        if matches!(self.listing(server), Some(Listing::Listed(_))) {
            return Ok(());
        }
        let Some((_, client)) = self.servers.get(server) else { return Ok(()) };
        let attempt = self.failures().get(server).copied().unwrap_or(0) + 1;
        let call = ListingCall {
            key: discovery_key(server, attempt).into(),
            entry: ToolEntry::plain(Arc::new(McpListing::new(server, client.clone())), object_schema()),
            arguments: json!({"method": "tools/list"}),
            task,
            agent,
        };
        pending.tool_starts.push(call.start());
        let effect =
            ToolEffect { entry: &call.entry, arguments: &call.arguments, key: &call.key, id: &call.key };
        let outcomes = ctx.run_tools(task, &[Some(effect)], pending).await?;
        let outcome =
            outcomes.into_iter().flatten().next().map(|(outcome, _)| outcome).unwrap_or_else(|| {
                ToolCallOutcome::Failed {
                    error: format!("MCP server '{server}' was not asked for its tools"),
                }
            });
        let listing = match listed(&outcome) {
            Some(tools) => Listing::Listed(Arc::new(compiled(tools))),
            None => self.failed_listing(server, &call, &outcome, pending),
        };
        pending.tool_ends.push(ToolCallEnd { id: call.key, outcome });
        self.catalog.lock().unwrap_or_else(|p| p.into_inner()).insert(server.to_owned(), listing);
        Ok(())
    }

    /// A listing of `server` that gave no tools: counted (the next one has the next key), logged
    /// and announced; the tools are unavailable, each call of one saying why.
    fn failed_listing(
        &self,
        server: &str,
        call: &ListingCall<'_>,
        outcome: &ToolCallOutcome,
        pending: &mut Step,
    ) -> Listing {
        let error = match outcome {
            ToolCallOutcome::Failed { error } => error.clone(),
            ToolCallOutcome::Succeeded { .. } => format!("MCP server '{server}' listed unreadable tools"),
        };
        tracing::warn!(server, %error, "an MCP server's tools could not be listed");
        *self.failures().entry(server.to_owned()).or_default() += 1;
        call.announce_failure(pending, &error);
        Listing::Failed(error)
    }

    /// The listings of each server that gave no tools.
    fn failures(&self) -> std::sync::MutexGuard<'_, HashMap<String, u32>> {
        self.failed.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The entries an agent's tool name stands for, if it names MCP tools: one tool, or all the
    /// server offers (and the crew allows). A tool that cannot be had is an entry whose calls
    /// say why.
    pub fn entries(&self, name: &str) -> Option<Vec<ToolEntry>> {
        let reference = McpToolRef::parse(name)?;
        let (spec, client) = self.servers.get(reference.server())?;
        let allowed =
            |tool: &str| spec.tools.as_ref().is_none_or(|allowed| allowed.iter().any(|t| t == tool));
        let listing = self.listing(&spec.name).unwrap_or_else(|| {
            Listing::Failed(format!("the tools of MCP server '{}' were not listed", spec.name))
        });
        let entry = |found: &Discovered| self.entry(spec, client, found);
        Some(match (reference, listing) {
            (McpToolRef::All { .. }, Listing::Listed(tools)) => tools
                .iter()
                .filter(|t| allowed(&t.info.name) && check_tool_name(&full_name(spec, &t.info.name)).is_ok())
                .map(entry)
                .collect(),
            (McpToolRef::All { .. }, Listing::Failed(_)) => Vec::new(),
            (McpToolRef::One { tool, .. }, Listing::Listed(tools)) => {
                match tools.iter().find(|t| t.info.name == tool) {
                    Some(found) => vec![entry(found)],
                    None => {
                        vec![unavailable(name, format!("MCP server '{}' offers no tool '{tool}'", spec.name))]
                    }
                }
            }
            (McpToolRef::One { .. }, Listing::Failed(error)) => vec![unavailable(name, error)],
        })
    }

    fn entry(&self, spec: &McpServerSpec, client: &Arc<McpClient>, found: &Discovered) -> ToolEntry {
        let remote = &found.info.name;
        let idempotent =
            spec.idempotent.get(remote).copied().unwrap_or_else(|| found.info.idempotent_by_annotations());
        let info = ToolInfo {
            name: full_name(spec, remote),
            description: found.info.description.clone(),
            parameters: found.info.input_schema.clone(),
            idempotent,
        };
        let tool =
            McpTool::new(info, &spec.name, remote, client.clone(), self.metrics.clone(), self.max_text_bytes);
        let requires_approval = spec.requires_approval.iter().any(|t| t == remote);
        ToolEntry { requires_approval, ..ToolEntry::plain(Arc::new(tool), found.schema.clone()) }
    }
}

/// The tools a journaled listing holds; `None` for one that failed.
fn listed(outcome: &ToolCallOutcome) -> Option<Vec<McpToolInfo>> {
    match outcome {
        ToolCallOutcome::Succeeded { result, .. } => serde_json::from_str(result).ok(),
        ToolCallOutcome::Failed { .. } => None,
    }
}

/// One listing of a server's tools, as a tool call of the task that needs the server.
struct ListingCall<'a> {
    key: super::keys::JournalKey,
    entry: ToolEntry,
    arguments: serde_json::Value,
    task: &'a str,
    agent: &'a str,
}

impl ListingCall<'_> {
    fn start(&self) -> ToolCallStart {
        ToolCallStart {
            id: self.key.clone(),
            conversation: self.entry.name().into(),
            task: self.task.to_owned(),
            agent: self.agent.to_owned(),
            tool: self.entry.name().to_owned(),
            arguments: self.arguments.clone(),
            approval: None,
        }
    }

    /// `tool.started` and `tool.failed` for a listing that failed (in the step that journals it).
    fn announce_failure(&self, pending: &mut Step, error: &str) {
        let (id, tool) = (self.key.as_str().to_owned(), self.entry.name().to_owned());
        let arguments = self.arguments.clone();
        let started = ToolStarted { tool_call_id: id.clone(), tool: tool.clone(), arguments };
        pending.event(Some(self.task), Some(self.agent), EventData::ToolStarted(started));
        let failed = ToolFailed { tool_call_id: id, tool, error: error.to_owned() };
        pending.event(Some(self.task), Some(self.agent), EventData::ToolFailed(failed));
    }
}

fn full_name(spec: &McpServerSpec, tool: &str) -> String {
    format!("{}{MCP_SEPARATOR}{tool}", spec.name)
}

fn unavailable(name: &str, error: String) -> ToolEntry {
    let tool: Arc<dyn Tool> = Arc::new(UnavailableTool::new(name, error));
    let schema = object_schema();
    ToolEntry::plain(tool, schema)
}

/// `{"type": "object"}`, compiled once.
pub(super) fn object_schema() -> CompiledSchema {
    static OBJECT: std::sync::LazyLock<CompiledSchema> = std::sync::LazyLock::new(|| {
        CompiledSchema::compile(&json!({"type": "object"})).expect("a constant schema compiles")
    });
    OBJECT.clone()
}

fn compiled(tools: Vec<McpToolInfo>) -> Vec<Discovered> {
    tools
        .into_iter()
        .map(|info| {
            let schema = match info.input_schema.is_object() {
                true => CompiledSchema::compile(&info.input_schema).ok(),
                false => None,
            };
            Discovered { schema: schema.unwrap_or_else(object_schema), info }
        })
        .collect()
}
