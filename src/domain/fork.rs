//! Forks: a new run from an ended run's journal. The tasks before the fork's task keep their
//! journaled outputs (no model or tool call is repeated); the task at the fork and every one
//! after run anew, with the fork's changes to inputs, agents and tasks applied.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::crew::CrewSpec;
use super::validate::FieldError;
use super::RunId;

/// Where a run was forked from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ForkedFrom {
    #[schema(value_type = Uuid)]
    pub run_id: RunId,
    /// The task the fork ran anew from (the ones before it were taken over).
    pub task: String,
}

/// The body of `POST /v1/runs/{id}/fork`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ForkRequest {
    /// The task to run anew from.
    pub at: ForkPoint,
    #[serde(default)]
    pub changes: ForkChanges,
}

/// A fork's task.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ForkPoint {
    /// A task of the run's crew.
    #[schema(min_length = 1, max_length = 100)]
    pub task: String,
}

/// What a fork changes: inputs (merged over the run's), and fields of agents and tasks by name
/// (merged over the crew's; a task's only at or after the fork's task).
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ForkChanges {
    /// Inputs to set (the others keep the run's values).
    #[serde(default)]
    #[schema(value_type = Object)]
    pub inputs: Map<String, Value>,
    /// By agent name: fields of an agent spec to set (`llm`, `goal`, `backstory`, `role`,
    /// `tools`...; not `name`).
    #[serde(default)]
    #[schema(value_type = Object)]
    pub agents: Map<String, Value>,
    /// By task name: fields of a task spec to set (`description`, `expected_output`...; not
    /// `name`).
    #[serde(default)]
    #[schema(value_type = Object)]
    pub tasks: Map<String, Value>,
}

/// What a fork runs: its crew and inputs, changes applied, and the tasks it takes over.
#[derive(Debug, Clone)]
pub struct ForkPlan {
    pub crew: CrewSpec,
    pub inputs: Map<String, Value>,
    /// The names of the tasks before the fork's task, in order.
    pub reused: Vec<String>,
}

/// The plan of a fork at `at` of a run of `crew` with `inputs`, with `changes` applied. Every
/// problem names its field.
pub fn apply(
    crew: &CrewSpec,
    inputs: &Map<String, Value>,
    at: &str,
    changes: &ForkChanges,
) -> Result<ForkPlan, Vec<FieldError>> {
    let mut errors = Vec::new();
    let Some(position) = crew.tasks.iter().position(|t| t.name == at) else {
        let names: Vec<&str> = crew.tasks.iter().map(|t| t.name.as_str()).collect();
        return Err(vec![FieldError::new(
            "at.task",
            format!("the crew has no task '{at}' (its tasks: {})", names.join(", ")),
        )]);
    };
    let mut spec = match serde_json::to_value(crew) {
        Ok(spec) => spec,
        Err(e) => return Err(vec![FieldError::new("", format!("the run's crew cannot be read: {e}"))]),
    };
    merge_named(&mut spec, "agents", &changes.agents, |_| None, &mut errors);
    let reused: Vec<String> = crew.tasks[..position].iter().map(|t| t.name.clone()).collect();
    let before_at = |name: &str| {
        reused.iter().any(|r| r == name).then(|| {
            format!("task '{name}' comes before '{at}': its output is taken over from the run, not run again")
        })
    };
    merge_named(&mut spec, "tasks", &changes.tasks, before_at, &mut errors);
    if !errors.is_empty() {
        return Err(errors);
    }
    let crew = CrewSpec::from_json(spec)
        .map_err(|errors| errors.into_iter().map(|e| e.under("changes")).collect::<Vec<_>>())?;
    let mut inputs = inputs.clone();
    inputs.extend(changes.inputs.clone());
    Ok(ForkPlan { crew, inputs, reused })
}

/// Merge `changes` (by name) into the objects of `spec[list]`; a name the list lacks, a change
/// that is not an object or renames, and a name `refuse` refuses are errors under
/// `changes.<list>.<name>`.
fn merge_named(
    spec: &mut Value,
    list: &str,
    changes: &Map<String, Value>,
    refuse: impl Fn(&str) -> Option<String>,
    errors: &mut Vec<FieldError>,
) {
    let items = spec.get_mut(list).and_then(Value::as_array_mut);
    let Some(items) = items else { return };
    for (name, change) in changes {
        let field = format!("changes.{list}.{name}");
        if let Some(why) = refuse(name) {
            errors.push(FieldError::new(field, why));
            continue;
        }
        let Some(target) = items.iter_mut().find(|item| item["name"] == name.as_str()) else {
            errors.push(FieldError::new(
                field,
                format!("the crew has no {} named '{name}'", &list[..list.len() - 1]),
            ));
            continue;
        };
        let Some(change) = change.as_object() else {
            errors.push(FieldError::new(field, "must be an object of the fields to change"));
            continue;
        };
        if change.contains_key("name") {
            errors.push(FieldError::new(format!("{field}.name"), "cannot be changed"));
            continue;
        }
        if let Some(target) = target.as_object_mut() {
            target.extend(change.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crew() -> CrewSpec {
        CrewSpec::from_json(json!({
            "name": "c",
            "agents": [{"name": "w", "role": "Writer", "goal": "Write", "backstory": "b"}],
            "tasks": [
                {"name": "one", "description": "d1 {topic}", "expected_output": "o1", "agent": "w"},
                {"name": "two", "description": "d2", "expected_output": "o2", "agent": "w"},
                {"name": "three", "description": "d3", "expected_output": "o3", "agent": "w"}
            ]
        }))
        .expect("crew")
    }

    fn changes(value: Value) -> ForkChanges {
        serde_json::from_value(value).expect("changes")
    }

    #[test]
    fn a_fork_takes_over_the_tasks_before_its_task_and_applies_the_changes() {
        let inputs = json!({"topic": "tides", "tone": "dry"}).as_object().cloned().expect("inputs");
        let change = changes(json!({
            "inputs": {"tone": "warm"},
            "agents": {"w": {"llm": "openai/gpt-4o", "goal": "Write well"}},
            "tasks": {"three": {"description": "d3, shorter"}}
        }));
        let ForkPlan { crew, inputs, reused } = apply(&crew(), &inputs, "two", &change).expect("applied");
        assert_eq!(reused, ["one"]);
        assert_eq!(inputs["tone"], "warm");
        assert_eq!(inputs["topic"], "tides");
        assert_eq!(crew.agents[0].goal, "Write well");
        assert_eq!(crew.agents[0].llm.as_ref().map(|l| l.model()), Some("openai/gpt-4o"));
        assert_eq!(crew.tasks[2].description, "d3, shorter");
        assert_eq!(crew.tasks[0].description, "d1 {topic}");
    }

    #[test]
    fn changes_that_do_not_fit_the_crew_name_their_field() {
        let inputs = Map::new();
        let fields = |at: &str, value: Value| -> Vec<String> {
            apply(&crew(), &inputs, at, &changes(value))
                .expect_err("refused")
                .into_iter()
                .map(|e| e.field)
                .collect()
        };
        assert_eq!(fields("four", json!({})), ["at.task"]);
        assert_eq!(fields("two", json!({"tasks": {"one": {"description": "x"}}})), ["changes.tasks.one"]);
        assert_eq!(fields("two", json!({"agents": {"nobody": {"goal": "x"}}})), ["changes.agents.nobody"]);
        assert_eq!(fields("two", json!({"agents": {"w": "x"}})), ["changes.agents.w"]);
        assert_eq!(fields("two", json!({"agents": {"w": {"name": "v"}}})), ["changes.agents.w.name"]);
        let wrong_type = fields("two", json!({"agents": {"w": {"max_iter": "many"}}}));
        assert!(wrong_type.iter().all(|f| f.starts_with("changes.agents")), "{wrong_type:?}");
    }
}
