//! `agentd crews import crewai PATH`: a CrewAI project's `config/agents.yaml` and
//! `config/tasks.yaml` sent to a server's `POST /v1/crews:import` (or, with `--dry-run`, converted
//! and checked here, against this machine's settings, and printed).

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use serde_json::{Map, Value};

use super::{resolve, BoxError, ServeArgs};
use crate::domain::crewai::{import_crewai, CrewImport, ImportFormat, ImportWarning};

#[derive(Debug, Subcommand)]
pub(super) enum CrewsCommand {
    /// Import a project of another framework as a crew.
    #[command(subcommand)]
    Import(ImportCommand),
}

#[derive(Debug, Subcommand)]
pub(super) enum ImportCommand {
    /// A CrewAI project (as `crewai create crew` makes it): its config/agents.yaml and
    /// config/tasks.yaml, stored as a crew. Prints the stored crew as JSON, and every field the
    /// crew does not honour as a warning on stderr.
    Crewai(CrewaiArgs),
}

#[derive(Debug, Clone, Args)]
pub(super) struct CrewaiArgs {
    /// The project's directory (its src/<name>/config/ is found), or the folder holding
    /// agents.yaml and tasks.yaml.
    path: PathBuf,
    /// The crew's name (default: the project directory's name).
    #[arg(long)]
    name: Option<String>,
    /// What the project's crew.py says (YAML or JSON): crew fields such as process, manager_llm,
    /// planning, memory, knowledge, tools; and tool_names, models, agents, tasks (see the guide
    /// "Moving a CrewAI project to agentd").
    #[arg(long)]
    mapping: Option<PathBuf>,
    /// The process (over the mapping's).
    #[arg(long, value_parser = ["sequential", "hierarchical"])]
    process: Option<String>,
    /// The manager's model for the hierarchical process (over the mapping's).
    #[arg(long)]
    manager_llm: Option<String>,
    /// Plan each task before performing it (over the mapping's).
    #[arg(long)]
    planning: bool,
    /// The model of every agent, whatever its `llm` says (the mapping's `models: {"*": ...}`).
    #[arg(long)]
    model: Option<String>,
    /// Convert and check here (against this machine's settings: its providers) and print the
    /// crew spec; nothing is sent.
    #[arg(long)]
    dry_run: bool,
    /// The agentd server.
    #[arg(long, env = "AGENTD_URL", default_value = "http://127.0.0.1:8080")]
    url: String,
    /// An API key with the `manage` scope (when the server has keys).
    #[arg(long, env = "AGENTD_API_KEY", hide_env_values = true)]
    api_key: Option<String>,
    #[command(flatten)]
    serve: ServeArgs,
}

pub(super) async fn run(command: CrewsCommand) -> Result<(), BoxError> {
    let CrewsCommand::Import(ImportCommand::Crewai(args)) = command;
    let import = read_project(&args)?;
    match args.dry_run {
        true => dry_run(&args, &import),
        false => send(&args, &import).await,
    }
}

/// The project's files and mapping, with the flags over the mapping.
fn read_project(args: &CrewaiArgs) -> Result<CrewImport, BoxError> {
    let (root, config) = config_dir(&args.path)?;
    let read = |name: &str| {
        let path = config.join(name);
        std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))
    };
    let agents_yaml = read("agents.yaml")?;
    let tasks_yaml = read("tasks.yaml")?;
    let mut mapping = match &args.mapping {
        None => Map::new(),
        Some(path) => {
            let text =
                std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            match serde_norway::from_str::<Value>(&text) {
                Ok(Value::Object(fields)) => fields,
                Ok(Value::Null) => Map::new(),
                Ok(_) => {
                    return Err(format!("{}: the mapping must be a mapping of fields", path.display()).into())
                }
                Err(e) => return Err(format!("{}: not valid YAML or JSON: {e}", path.display()).into()),
            }
        }
    };
    if let Some(process) = &args.process {
        mapping.insert("process".into(), Value::String(process.clone()));
    }
    if let Some(model) = &args.manager_llm {
        mapping.insert("manager_llm".into(), Value::String(model.clone()));
    }
    if args.planning {
        mapping.insert("planning".into(), Value::Bool(true));
    }
    if let Some(model) = &args.model {
        let models = mapping.entry("models").or_insert_with(|| Value::Object(Map::new()));
        match models {
            Value::Object(models) => {
                models.insert("*".into(), Value::String(model.clone()));
            }
            _ => return Err("the mapping's `models` must be a mapping, to add --model to it".into()),
        }
    }
    let name = match &args.name {
        Some(name) => name.clone(),
        None => crew_name(&root)?,
    };
    Ok(CrewImport {
        format: ImportFormat::Crewai,
        name,
        agents_yaml,
        tasks_yaml,
        mapping: (!mapping.is_empty()).then_some(Value::Object(mapping)),
    })
}

/// The project's root and the folder of its agents.yaml and tasks.yaml: `PATH` itself,
/// `PATH/config`, or the one `PATH/src/<package>/config` (the layout `crewai create crew` makes).
fn config_dir(path: &Path) -> Result<(PathBuf, PathBuf), BoxError> {
    let has_files = |dir: &Path| dir.join("agents.yaml").is_file() && dir.join("tasks.yaml").is_file();
    if has_files(path) {
        let root = match path.file_name().and_then(|n| n.to_str()) {
            Some("config") => path.parent().unwrap_or(path).to_path_buf(),
            _ => path.to_path_buf(),
        };
        return Ok((root, path.to_path_buf()));
    }
    if has_files(&path.join("config")) {
        return Ok((path.to_path_buf(), path.join("config")));
    }
    let src = path.join("src");
    let found: Vec<PathBuf> = std::fs::read_dir(&src)
        .map(|entries| {
            entries.filter_map(Result::ok).map(|e| e.path().join("config")).filter(|c| has_files(c)).collect()
        })
        .unwrap_or_default();
    match found.as_slice() {
        [config] => Ok((path.to_path_buf(), config.clone())),
        [] => Err(format!(
            "{}: no agents.yaml and tasks.yaml here, in config/ or in src/<package>/config/",
            path.display()
        )
        .into()),
        _ => Err(format!("{}: several src/<package>/config/ folders: name one", path.display()).into()),
    }
}

/// A crew name from a directory's name: letters, digits, `-`, `_` and `.` kept, the rest `-`.
fn crew_name(root: &Path) -> Result<String, BoxError> {
    let absolute = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let base = absolute.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let name: String = base
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '-' })
        .take(100)
        .collect();
    match name.trim_matches('.').is_empty() {
        true => Err("cannot name the crew after the directory: give --name".into()),
        false => Ok(name),
    }
}

fn dry_run(args: &CrewaiArgs, import: &CrewImport) -> Result<(), BoxError> {
    let config = resolve(&args.serve.load()?)?;
    let ctx = crate::app::validation_context(&config);
    match import_crewai(import, &ctx) {
        Ok(imported) => {
            print_warnings(&imported.warnings);
            println!("{}", serde_json::to_string_pretty(&imported.spec)?);
            Ok(())
        }
        Err(errors) => {
            for error in &errors {
                eprintln!("error: {}: {}", error.field, error.message);
            }
            Err(format!("the project cannot be imported ({} errors)", errors.len()).into())
        }
    }
}

async fn send(args: &CrewaiArgs, import: &CrewImport) -> Result<(), BoxError> {
    let url = format!("{}/v1/crews:import", args.url.trim_end_matches('/'));
    let body = serde_json::json!({
        "format": "crewai",
        "name": import.name,
        "agents_yaml": import.agents_yaml,
        "tasks_yaml": import.tasks_yaml,
        "mapping": import.mapping,
    });
    let client = reqwest::Client::new();
    let mut request = client.post(&url).json(&body);
    if let Some(key) = &args.api_key {
        request = request.bearer_auth(key);
    }
    let response = request.send().await.map_err(|e| format!("cannot reach {url}: {e}"))?;
    let status = response.status();
    let answer: Value =
        response.json().await.map_err(|e| format!("{url} answered {status} without JSON: {e}"))?;
    if !status.is_success() {
        let detail = answer.get("detail").and_then(Value::as_str).unwrap_or("(no detail)");
        eprintln!("error: {status}: {detail}");
        for error in answer.get("errors").and_then(Value::as_array).into_iter().flatten() {
            let field = error.get("field").and_then(Value::as_str).unwrap_or_default();
            let message = error.get("message").and_then(Value::as_str).unwrap_or_default();
            eprintln!("error: {field}: {message}");
        }
        return Err(format!("the server refused the import ({status})").into());
    }
    let warnings: Vec<ImportWarning> =
        serde_json::from_value(answer.get("warnings").cloned().unwrap_or_default()).unwrap_or_default();
    print_warnings(&warnings);
    let verb = if status == reqwest::StatusCode::CREATED { "created" } else { "replaced" };
    eprintln!("crew '{}' {verb}", import.name);
    println!("{}", serde_json::to_string_pretty(&answer["crew"])?);
    Ok(())
}

fn print_warnings(warnings: &[ImportWarning]) {
    for warning in warnings {
        eprintln!("warning: {}: {}", warning.field, warning.message);
    }
}
