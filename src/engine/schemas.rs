//! The compiled JSON schemas of a run: every tool's parameters and every task's output schema.
//! The built-in tools' and the two delegation tools' schemas never change: they are compiled once
//! per engine ([`SharedSchemas`]) and shared by every run; a run compiles only its crew's own
//! (HTTP tools, output schemas) when it starts, so a crew without schemas of its own compiles
//! nothing. Turns take clones, which share the compiled form, so no tool call and no final answer
//! compiles a schema.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use super::prompts;
use super::toolbox::DelegateMode;
use super::EngineError;
use crate::domain::crew::{CrewSpec, TaskSpec};
use crate::domain::schema::CompiledSchema;
use crate::domain::ErrorKind;
use crate::tools::Tool;

/// A schema compiled, or why it could not be (for a crew stored before a check it fails).
type Compiled = Result<CompiledSchema, String>;

/// The schemas every run shares: the built-in tools' and the delegation tools'.
pub(super) struct SharedSchemas {
    /// By tool name.
    builtins: HashMap<String, Compiled>,
    delegate_work: Compiled,
    ask_question: Compiled,
}

impl SharedSchemas {
    pub fn compile(builtins: &[Arc<dyn Tool>]) -> Self {
        let mut compiled = HashMap::new();
        for tool in builtins {
            let info = tool.info();
            compiled.entry(info.name.clone()).or_insert_with(|| compile(&info.parameters));
        }
        let delegation = |mode| compile(&prompts::delegation_tool(mode, "").parameters);
        Self {
            builtins: compiled,
            delegate_work: delegation(DelegateMode::Work),
            ask_question: delegation(DelegateMode::Question),
        }
    }
}

pub(super) struct RunSchemas {
    /// By tool name: the crew's tools (which shadow the built-ins of their name).
    tools: HashMap<String, Compiled>,
    /// By task name.
    outputs: HashMap<String, Compiled>,
    shared: Arc<SharedSchemas>,
}

fn compile(schema: &Value) -> Compiled {
    CompiledSchema::compile(schema).map_err(|e| e.to_string())
}

impl RunSchemas {
    /// Compile `crew`'s own schemas, beside the `shared` ones.
    pub fn compile(crew: &CrewSpec, shared: Arc<SharedSchemas>) -> Self {
        let tools = crew.tools.iter().map(|t| (t.name.clone(), compile(&t.parameters))).collect();
        let outputs = crew
            .tasks
            .iter()
            .filter_map(|t| t.output_schema.as_ref().map(|s| (t.name.clone(), compile(s))))
            .collect();
        Self { tools, outputs, shared }
    }

    /// The parameters of the tool `name`.
    pub fn tool(&self, name: &str) -> Result<CompiledSchema, EngineError> {
        let unusable = |e: &str| format!("the parameters schema of tool '{name}' cannot be used: {e}");
        match self.tools.get(name).or_else(|| self.shared.builtins.get(name)) {
            Some(Ok(schema)) => Ok(schema.clone()),
            Some(Err(e)) => Err(EngineError::failed(ErrorKind::Internal, unusable(e))),
            None => {
                Err(EngineError::failed(ErrorKind::Internal, format!("no schema compiled for tool '{name}'")))
            }
        }
    }

    /// The parameters of a delegation tool.
    pub fn delegation(&self, mode: DelegateMode) -> Result<CompiledSchema, EngineError> {
        let compiled = match mode {
            DelegateMode::Work => &self.shared.delegate_work,
            DelegateMode::Question => &self.shared.ask_question,
        };
        compiled.clone().map_err(|e| EngineError::failed(ErrorKind::Internal, e))
    }

    /// The output schema of `task`, if it has one.
    pub fn output(&self, task: &TaskSpec) -> Result<Option<CompiledSchema>, EngineError> {
        if task.output_schema.is_none() {
            return Ok(None);
        }
        let name = &task.name;
        match self.outputs.get(name) {
            Some(Ok(schema)) => Ok(Some(schema.clone())),
            Some(Err(e)) => Err(EngineError::failed(
                ErrorKind::Internal,
                format!("the output schema of task '{name}' cannot be used: {e}"),
            )),
            None => Err(EngineError::failed(
                ErrorKind::Internal,
                format!("no output schema compiled for task '{name}'"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::engine::assemble::Assembler;
    use crate::engine::react::ActionInput;
    use crate::engine::toolbox::{Prepared, RunTools};
    use crate::llm::{ChatRequest, LlmClient, LlmError, LlmErrorKind, LlmFuture, LlmRegistry};
    use crate::outbound::egress::EgressPolicy;
    use crate::tools::builtin::instantiate;
    use crate::tools::http::Outbound;

    /// Never called: these tests only assemble turns.
    struct NoModel;

    impl LlmClient for NoModel {
        fn chat<'a>(&'a self, _: &'a ChatRequest) -> LlmFuture<'a> {
            Box::pin(async { Err(LlmError::new(LlmErrorKind::Other, "not called")) })
        }
    }

    /// Two tasks of two agents share the HTTP tool `lookup` (whose SKU has a pattern, whose
    /// `when` is a date-time and whose item comes through a `$ref`); both have output schemas.
    fn crew() -> CrewSpec {
        let parameters = json!({"type": "object", "$defs": {"item": {"type": "object",
            "properties": {"sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]+$"}}, "required": ["sku"]}},
            "properties": {"item": {"$ref": "#/$defs/item"}, "when": {"type": "string", "format": "date-time"}},
            "required": ["item"]});
        let output = json!({"type": "object", "definitions": {"email": {"type": "string", "format": "email"}},
            "properties": {"contact": {"$ref": "#/definitions/email"},
                "code": {"type": "string", "pattern": "^[0-9]{4}$"}}, "required": ["contact", "code"]});
        let agent = |name: &str| {
            json!({"name": name, "role": "r", "goal": "g", "backstory": "b", "tools": ["lookup", "calculator"],
                "allow_delegation": true})
        };
        let task = |name: &str, agent: &str| json!({"name": name, "description": "d", "expected_output": "e", "agent": agent, "output_schema": output});
        CrewSpec::from_json(json!({
            "name": "c",
            "agents": [agent("a"), agent("b")],
            "tasks": [task("t1", "a"), task("t2", "b")],
            "tools": [{"name": "lookup", "description": "Look up", "parameters": parameters,
                "http": {"url": "https://example.com/lookup", "method": "POST", "timeout_ms": 1000}}]
        }))
        .expect("crew")
    }

    /// What an [`Assembler`] borrows from the engine: a model that is never asked, the built-in
    /// tools, no inputs.
    struct EngineParts {
        llms: LlmRegistry,
        outbound: Arc<Outbound>,
        builtins: Vec<Arc<dyn Tool>>,
        inputs: serde_json::Map<String, Value>,
        secrets: Arc<dyn crate::tools::secrets::SecretSource>,
        mcp: super::super::mcp::McpRun,
    }

    impl EngineParts {
        fn new() -> Self {
            let llms = LlmRegistry::new("openai/m").with_client("openai", Arc::new(NoModel), true);
            let outbound = Arc::new(
                Outbound::new(EgressPolicy::default(), Duration::from_secs(1), 1000).expect("outbound"),
            );
            let builtins = instantiate(outbound.clone());
            let secrets: Arc<dyn crate::tools::secrets::SecretSource> =
                Arc::new(crate::tools::secrets::NoSecrets);
            let mcp = super::super::mcp::McpRun::new(
                &crew(),
                &outbound,
                &secrets,
                Arc::new(crate::metrics::Metrics::default()),
                &Default::default(),
            );
            Self { llms, outbound, builtins, inputs: serde_json::Map::new(), secrets, mcp }
        }

        fn assembler<'a>(&'a self, crew: &'a CrewSpec, schemas: &'a RunSchemas) -> Assembler<'a> {
            Assembler {
                llms: &self.llms,
                builtins: &self.builtins,
                outbound: &self.outbound,
                secrets: &self.secrets,
                mcp: &self.mcp,
                crew,
                inputs: &self.inputs,
                rate_key: "k:",
                schemas,
                knowledge: None,
                memory: None,
                tenant: &crate::domain::DEFAULT_TENANT_ID,
                history: None,
            }
        }
    }

    fn refusal(prepared: Prepared) -> Option<String> {
        match prepared {
            Prepared::Refused { error, .. } => Some(error),
            _ => None,
        }
    }

    /// The compiled parameters of the tool `name` (a delegation tool's included) in `schemas`.
    fn parameters(schemas: &RunSchemas, name: &str) -> CompiledSchema {
        let compiled = match name {
            "delegate_work_to_coworker" => schemas.delegation(DelegateMode::Work),
            "ask_question_to_coworker" => schemas.delegation(DelegateMode::Question),
            _ => schemas.tool(name),
        };
        compiled.expect("compiled")
    }

    #[test]
    fn each_schema_is_compiled_once_per_run_and_shared_by_every_turn() {
        let crew = crew();
        let engine = EngineParts::new();
        let shared = Arc::new(SharedSchemas::compile(&engine.builtins));
        let schemas = RunSchemas::compile(&crew, shared.clone());
        let assembler = engine.assembler(&crew, &schemas);
        let turns: Vec<_> =
            crew.tasks.iter().map(|task| assembler.performer(task, &[]).expect("turn")).collect();
        // `CompiledSchema::compile` runs in `SharedSchemas::compile` (once per engine) and
        // `RunSchemas::compile` (once per run) only; turns hold handles on their results, so two
        // turns (and the run's schemas) share one compiled form per schema, and another run shares
        // the built-in and delegation tools' with this one.
        let other_run = RunSchemas::compile(&crew, shared);
        for name in ["lookup", "calculator", "delegate_work_to_coworker", "ask_question_to_coworker"] {
            let compiled = |turn: &crate::engine::turn::AgentTurn| {
                turn.toolbox.find(name).map(|entry| entry.arguments.clone()).expect("tool")
            };
            let (first, second) = (compiled(&turns[0]), compiled(&turns[1]));
            let offered = turns[0].toolbox.find(name).map(|entry| entry.info.parameters.clone());
            assert_eq!(
                Some(first.schema().clone()),
                offered,
                "{name}: the schema offered is the one compiled"
            );
            assert!(first.same_as(&second), "{name}");
            assert!(first.same_as(&parameters(&schemas, name)), "{name}");
            let elsewhere = parameters(&other_run, name);
            // The crew's own tool is compiled per run; the built-ins and delegations are shared.
            assert_eq!(first.same_as(&elsewhere), name != "lookup", "{name}");
        }
        for (turn, task) in turns.iter().zip(&crew.tasks) {
            let compiled = turn.output_schema.as_ref().expect("output schema");
            assert!(compiled.same_as(&schemas.output(task).expect("compiled").expect("some")));
            assert_eq!(
                Some(compiled.schema()),
                task.output_schema.as_ref(),
                "the raw schema stays for prompts"
            );
        }
    }

    #[test]
    fn tool_arguments_and_task_outputs_enforce_pattern_references_and_format() {
        let crew = crew();
        let engine = EngineParts::new();
        let schemas = RunSchemas::compile(&crew, Arc::new(SharedSchemas::compile(&engine.builtins)));
        let assembler = engine.assembler(&crew, &schemas);
        let turn = assembler.performer(&crew.tasks[0], &[]).expect("turn");
        let state = RunTools::default();
        let prepare =
            |arguments: Value| refusal(turn.toolbox.prepare("lookup", ActionInput::Json(arguments), &state));
        assert_eq!(prepare(json!({"item": {"sku": "ABC-1"}, "when": "2024-05-01T10:00:00Z"})), None);
        let refused = prepare(json!({"item": {"sku": "abc"}, "when": "soon"})).expect("refused");
        assert!(
            refused.starts_with(
                "Invalid arguments for tool 'lookup': $.item.sku: must match the pattern \"^[A-Z]{3}-[0-9]+$\"; \
                 got \"abc\"; $.when: must be a valid date-time; got \"soon\". The arguments must match this JSON schema: "
            ),
            "{refused}"
        );
        let refused = prepare(json!({"item": {}})).expect("refused");
        assert!(refused.contains("$.item: missing required property 'sku'"), "{refused}");

        let output = turn.output_schema.as_ref().expect("output schema");
        assert!(output.validate(&json!({"contact": "ada@example.com", "code": "1234"})).is_empty());
        assert_eq!(
            output.validate(&json!({"contact": "ada at example", "code": "12a4"})),
            [
                r#"$.code: must match the pattern "^[0-9]{4}$"; got "12a4""#,
                r#"$.contact: must be a valid email; got "ada at example""#
            ]
        );
    }

    #[test]
    fn a_schema_that_does_not_compile_fails_the_turn_that_uses_it() {
        // Crews are checked when submitted; one stored before a check it now fails still
        // compiles nothing at run time: the turn that needs the schema fails with its reason.
        let mut crew = crew();
        crew.tools[0].parameters =
            json!({"type": "object", "properties": {"x": {"$ref": "https://example.com/s.json"}}});
        crew.tasks[1].output_schema = Some(json!({"minimum": "3"}));
        let schemas = RunSchemas::compile(&crew, Arc::new(SharedSchemas::compile(&[])));
        let error = schemas.tool("lookup").expect_err("remote ref");
        assert!(
            error
                .to_string()
                .starts_with("the parameters schema of tool 'lookup' cannot be used: at properties.x.$ref: "),
            "{error}"
        );
        let error = schemas.output(&crew.tasks[1]).expect_err("malformed");
        assert_eq!(
            error.to_string(),
            "the output schema of task 't2' cannot be used: at minimum: expected number, got string"
        );
        assert!(schemas.output(&crew.tasks[0]).expect("compiles").is_some());
    }
}
