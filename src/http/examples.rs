//! Examples in the OpenAPI document: a valid request for each operation that creates something,
//! so that a reader (and a generated client's tests, and schemathesis's examples phase) has one
//! that the server accepts. The crew's model is the server's default.

use serde_json::{json, Value};
use utoipa::openapi::path::Operation;
use utoipa::openapi::OpenApi as OpenApiDoc;

/// The crew of every example: two agents, two tasks, a `{topic}` input.
pub fn crew() -> Value {
    json!({
        "agents": [
            {"name": "researcher", "role": "Senior researcher on {topic}", "goal": "Find the three key facts about {topic}",
             "backstory": "You read primary sources and cite them.", "tools": ["calculator"]},
            {"name": "writer", "role": "Technical writer", "goal": "Explain {topic} to engineers",
             "backstory": "You write short, exact prose."}
        ],
        "tasks": [
            {"name": "research", "description": "List the three key facts about {topic}.",
             "expected_output": "Three bullet points", "agent": "researcher"},
            {"name": "write", "description": "Write a paragraph on {topic} from the facts.",
             "expected_output": "One paragraph", "agent": "writer"}
        ]
    })
}

/// Put the examples into the document.
pub fn add(document: &mut OpenApiDoc) {
    let named = || {
        let mut spec = crew();
        spec["name"] = json!("research");
        spec
    };
    let examples = [
        (
            "/v1/kickoffs",
            json!({"crew": named(), "inputs": {"topic": "tides"}, "metadata": {"ticket": "T-1"}}),
        ),
        (
            "/v1/kickoffs/batch",
            json!({"crew": named(), "inputs": [{"topic": "tides"}, {"topic": "lunar orbits"}]}),
        ),
        ("/v1/crews/{name}", crew()),
        ("/v1/secrets/{name}", json!({"value": "sk-example-0123456789"})),
        ("/v1/tenants", json!({"name": "team-a"})),
        ("/v1/keys", json!({"tenant": "default", "name": "billing service", "scopes": ["read", "kickoff"]})),
    ];
    for (path, example) in examples {
        let Some(item) = document.paths.paths.get_mut(path) else { continue };
        let put = path.starts_with("/v1/crews") || path.starts_with("/v1/secrets");
        let operation = if put { item.put.as_mut() } else { item.post.as_mut() };
        if let Some(operation) = operation {
            set_body_example(operation, example);
        }
    }
}

fn set_body_example(operation: &mut Operation, example: Value) {
    let Some(body) = operation.request_body.as_mut() else { return };
    if let Some(content) = body.content.get_mut("application/json") {
        content.example = Some(example);
    }
}
