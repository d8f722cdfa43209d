//! A run's MCP servers: one client per server (sessions live as long as the execution), the
//! tools each offers, discovered when a task first needs the server and journaled with the run
//! (a resumed run offers exactly what it offered before, without asking again), and the toolbox
//! entries agents' `<server>__<tool>` and `<server>__*` names become.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use serde_json::json;

use super::journal::{Snapshot, Step, ToolCallEnd, ToolCallOutcome, ToolCallStart};
use super::toolbox::ToolEntry;
use super::{Context, EngineError};
use crate::domain::crew::{CrewSpec, McpServerSpec, McpToolRef, Process, TaskSpec, MCP_SEPARATOR};
use crate::domain::schema::CompiledSchema;
use crate::domain::validate::check_tool_name;
use crate::metrics::Metrics;
use crate::tools::http::Outbound;
use crate::tools::mcp::client::McpClient;
use crate::tools::mcp::{discover, discovery_key, McpTool, McpToolInfo, UnavailableTool};
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
        for spec in &crew.mcp_servers {
            let Ok(url) = reqwest::Url::parse(&spec.url) else { continue };
            let headers = spec.headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            let timeout = std::time::Duration::from_millis(spec.timeout_ms);
            let client = McpClient::new(url, headers, timeout, outbound.clone(), secrets.clone());
            servers.insert(spec.name.clone(), (spec.clone(), Arc::new(client)));
            let key = discovery_key(&spec.name);
            let journaled = snapshot.tool_calls.iter().find(|call| call.id == key);
            if let Some(ToolCallOutcome::Succeeded { result, .. }) =
                journaled.and_then(|c| c.outcome.as_ref())
            {
                if let Ok(tools) = serde_json::from_str::<Vec<McpToolInfo>>(result) {
                    catalog.insert(spec.name.clone(), Listing::Listed(Arc::new(compiled(tools))));
                }
            }
        }
        let max_text_bytes = outbound.max_response_bytes;
        Self { servers, catalog: Mutex::new(catalog), metrics, max_text_bytes }
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
    /// (the list joins `pending`, journaled with the task's next commit). A server out of reach
    /// leaves its tools unavailable to this task (each call says why) and is asked again by the
    /// next task.
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
        let listing = match ctx.guarded(discover(client)).await.ok_or(EngineError::Cancelled)? {
            Ok(tools) => {
                let key = discovery_key(server);
                let result = serde_json::to_string(&tools).unwrap_or_else(|_| "[]".to_owned());
                pending.tool_starts.push(ToolCallStart {
                    id: key.clone(),
                    conversation: format!("mcp:{server}"),
                    task: task.to_owned(),
                    agent: agent.to_owned(),
                    tool: format!("mcp:{server}"),
                    arguments: json!({"method": "tools/list"}),
                    approval: None,
                });
                let outcome = ToolCallOutcome::Succeeded { result, cached: false };
                pending.tool_ends.push(ToolCallEnd { id: key, outcome });
                Listing::Listed(Arc::new(compiled(tools)))
            }
            Err(error) => {
                tracing::warn!(server, %error, "an MCP server's tools could not be listed");
                Listing::Failed(format!("MCP server '{server}' is unavailable: {error}"))
            }
        };
        self.catalog.lock().unwrap_or_else(|p| p.into_inner()).insert(server.to_owned(), listing);
        Ok(())
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
