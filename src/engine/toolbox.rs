//! The tools one agent may use in one task, and the per-run state they share: name lookup that
//! forgives case, spaces and dashes; argument reading and validation against the tool's schema;
//! the result cache; usage caps.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};

use super::journal::{Snapshot, ToolCallOutcome};
use super::react::ActionInput;
use super::repair::parse_lenient;
use crate::domain::kickoff::request_fingerprint;
use crate::domain::schema::CompiledSchema;
use crate::llm::ToolDefinition;
use crate::tools::{Tool, ToolInfo};

/// What performs a call.
#[derive(Clone)]
pub enum Runner {
    /// A tool.
    Tool(Arc<dyn Tool>),
    /// A coworker of the hierarchical process, given work or asked a question.
    Delegate(DelegateMode),
}

/// The two ways a manager reaches a coworker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DelegateMode {
    Work,
    Question,
}

/// A tool with the options the crew set on it.
#[derive(Clone)]
pub struct ToolEntry {
    pub info: ToolInfo,
    /// `info.parameters`, compiled.
    pub arguments: CompiledSchema,
    pub runner: Runner,
    /// A successful result ends the task as its final answer.
    pub result_as_answer: bool,
    pub max_usage_count: Option<u32>,
    pub cache: bool,
    /// Each call waits for a reviewer's decision before it runs.
    pub requires_approval: bool,
}

impl ToolEntry {
    pub fn plain(tool: Arc<dyn Tool>, arguments: CompiledSchema) -> Self {
        let info = tool.info().clone();
        let runner = Runner::Tool(tool);
        Self {
            info,
            arguments,
            runner,
            result_as_answer: false,
            max_usage_count: None,
            cache: true,
            requires_approval: false,
        }
    }

    pub fn name(&self) -> &str {
        &self.info.name
    }

    /// Must this call run alone (CrewAI: no parallel batch with such tools)?
    pub fn runs_alone(&self) -> bool {
        self.result_as_answer || self.max_usage_count.is_some()
    }
}

/// The tools of one agent in one task.
#[derive(Clone, Default)]
pub struct Toolbox {
    entries: Vec<ToolEntry>,
}

/// A tool call checked and ready: run it, answer from the cache, or refuse with an observation.
pub enum Prepared {
    Run { entry: ToolEntry, arguments: Value },
    Cached { entry: ToolEntry, arguments: Value, result: String },
    Refused { arguments: Value, error: String },
}

impl Toolbox {
    pub fn new(entries: Vec<ToolEntry>) -> Self {
        Self { entries }
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The same tools without the delegation ones (a coworker does not delegate further).
    pub fn without_delegation(self) -> Self {
        let entries = self.entries.into_iter().filter(|e| matches!(e.runner, Runner::Tool(_))).collect();
        Self { entries }
    }

    /// The definitions offered to the model.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.entries
            .iter()
            .map(|e| {
                let info = &e.info;
                ToolDefinition {
                    name: info.name.clone(),
                    description: info.description.clone(),
                    parameters: info.parameters.clone(),
                }
            })
            .collect()
    }

    /// The tool the model meant: exact name, else ignoring case, spaces, `-` and `_`.
    pub fn find(&self, name: &str) -> Option<&ToolEntry> {
        let wanted = loose(name);
        self.entries
            .iter()
            .find(|e| e.name() == name)
            .or_else(|| self.entries.iter().find(|e| loose(e.name()) == wanted))
    }

    fn names(&self) -> String {
        self.entries.iter().map(ToolEntry::name).collect::<Vec<_>>().join(", ")
    }

    /// Check a call against the toolbox and the run's state.
    pub fn prepare(&self, name: &str, input: ActionInput, state: &RunTools) -> Prepared {
        let Some(entry) = self.find(name) else {
            let arguments = input.into_value();
            let error = format!("Tool '{name}' does not exist. Available tools: {}.", self.names());
            return Prepared::Refused { arguments, error };
        };
        let arguments = match read_arguments(entry, input) {
            Ok(arguments) => arguments,
            Err((arguments, error)) => return Prepared::Refused { arguments, error },
        };
        let errors = entry.arguments.validate(&arguments);
        if !errors.is_empty() {
            let schema = &entry.info.parameters;
            let error = format!(
                "Invalid arguments for tool '{}': {}. The arguments must match this JSON schema: {schema}",
                entry.name(),
                errors.join("; ")
            );
            return Prepared::Refused { arguments, error };
        }
        state.check(entry.clone(), arguments)
    }
}

impl ActionInput {
    /// The input as a JSON value, whatever its form.
    pub fn into_value(self) -> Value {
        match self {
            ActionInput::Json(value) => value,
            ActionInput::Text(text) => Value::String(text),
        }
    }

    /// Native arguments: JSON text, repaired if needed.
    pub fn from_native(arguments: &str) -> Self {
        match parse_lenient(arguments) {
            Some(value) => ActionInput::Json(value),
            None if arguments.trim().is_empty() => ActionInput::Json(Value::Object(Map::new())),
            None => ActionInput::Text(arguments.to_owned()),
        }
    }
}

/// Lower-case, without spaces, dashes and underscores.
fn loose(name: &str) -> String {
    name.chars().filter(|c| !matches!(c, ' ' | '-' | '_')).flat_map(char::to_lowercase).collect()
}

/// Arguments as an object; a plain text input fills the tool's single parameter.
fn read_arguments(entry: &ToolEntry, input: ActionInput) -> Result<Value, (Value, String)> {
    match input {
        ActionInput::Json(Value::Object(fields)) => Ok(Value::Object(fields)),
        ActionInput::Json(Value::Null) => Ok(Value::Object(Map::new())),
        ActionInput::Text(text) => match single_parameter(entry) {
            Some(name) => Ok(Value::Object(Map::from_iter([(name, Value::String(text))]))),
            None => {
                let error = format!("the arguments of '{}' must be a JSON object", entry.name());
                Err((Value::String(text), error))
            }
        },
        ActionInput::Json(other) => {
            let error = format!("the arguments of '{}' must be a JSON object", entry.name());
            Err((other, error))
        }
    }
}

/// The name of the tool's only parameter, if it has exactly one.
fn single_parameter(entry: &ToolEntry) -> Option<String> {
    let properties = entry.info.parameters.get("properties")?.as_object()?;
    match properties.keys().collect::<Vec<_>>().as_slice() {
        [only] => Some((*only).clone()),
        _ => None,
    }
}

/// Per-run tool state: cached results and usage counts, shared by every task of the run.
#[derive(Default)]
pub struct RunTools {
    inner: Mutex<ToolState>,
}

#[derive(Default)]
struct ToolState {
    cache: HashMap<(String, Vec<u8>), String>,
    usage: HashMap<String, u32>,
}

impl RunTools {
    /// The state as the journal left it: every successful, uncached call is in the cache and
    /// counts toward its tool's usage.
    pub fn from_snapshot(snapshot: &Snapshot) -> Self {
        let state = RunTools::default();
        for call in &snapshot.tool_calls {
            if let Some(ToolCallOutcome::Succeeded { result, cached: false }) = &call.outcome {
                state.record(&call.tool, &call.arguments, result);
            }
        }
        state
    }

    fn with<T>(&self, f: impl FnOnce(&mut ToolState) -> T) -> T {
        let mut state = self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        f(&mut state)
    }

    fn check(&self, entry: ToolEntry, arguments: Value) -> Prepared {
        let key = (entry.name().to_owned(), request_fingerprint(&arguments));
        self.with(|state| {
            if entry.cache {
                if let Some(result) = state.cache.get(&key) {
                    return Prepared::Cached { entry, arguments, result: result.clone() };
                }
            }
            let used = state.usage.get(entry.name()).copied().unwrap_or(0);
            match entry.max_usage_count {
                Some(max) if used >= max => {
                    let error = format!(
                        "Tool '{}' has reached its usage limit of {max} and cannot be used again.",
                        entry.name()
                    );
                    Prepared::Refused { arguments, error }
                }
                _ => Prepared::Run { entry, arguments },
            }
        })
    }

    /// Count a run of `tool` and remember its result.
    pub fn record(&self, tool: &str, arguments: &Value, result: &str) {
        let key = (tool.to_owned(), request_fingerprint(arguments));
        self.with(|state| {
            *state.usage.entry(tool.to_owned()).or_default() += 1;
            state.cache.insert(key, result.to_owned());
        });
    }
}
