//! The test harness: spawn the app on port 0 and talk to it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentd::app::App;
use agentd::config::Role;
use agentd::config::{self, ApiKeys, Config, Secret, Settings};
use agentd::domain::kickoff::{prepare_run, NewRun};
use agentd::domain::{CrewSpec, ValidationContext};
use agentd::engine::Engine;
use agentd::metrics::Metrics;
use agentd::outbound::egress::EgressPolicy;
use agentd::secrets::Vault;
use agentd::store::Store;
use reqwest::{Method, RequestBuilder, Response, StatusCode};
use serde_json::{json, Value};
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;

pub struct TestApp {
    pub base: String,
    pub client: reqwest::Client,
    api_key: Option<String>,
}

/// A configuration for tests: loopback, no keys, the default provider plus `local`. Nothing in
/// it reaches past the machine: both providers are on loopback (a port nothing listens on), and
/// the egress guards of tools and webhooks refuse public addresses as well as private ones, so a
/// test reaches only what it allows ([`loopback_egress`]).
pub fn test_config() -> Config {
    let file: Settings =
        toml::from_str("[providers.local]\nbase_url = \"http://127.0.0.1:9\"\n").expect("toml");
    let env = |name: &str| (name == "OPENAI_BASE_URL").then(|| "http://127.0.0.1:9/v1".to_owned());
    let mut config = Config {
        db_max_connections: 4,
        providers: config::providers(&file, env).expect("providers"),
        shutdown_grace: Duration::from_secs(1),
        // Documents are read by the agentd binary (`agentd extract`), not by this test binary.
        extraction: agentd::knowledge::Extraction {
            program: Some(env!("CARGO_BIN_EXE_agentd").into()),
            ..agentd::knowledge::Extraction::default()
        },
        tool_egress: EgressPolicy::default().refusing_public(),
        ..Config::new(Secret::new("postgres://unused"))
    };
    config.webhooks.egress = EgressPolicy::default().refusing_public();
    config
}

/// The egress guard of tests whose tools or webhooks reach servers they own: 127.0.0.1 and
/// nothing else (no public address either).
pub fn loopback_egress() -> EgressPolicy {
    EgressPolicy::parse("127.0.0.1/32").expect("policy").refusing_public()
}

/// A webhook receiver the test owns, on loopback: it answers every request 204 and keeps each
/// one's path and JSON body. Tests register their endpoints here (with [`loopback_egress`] as
/// the webhooks' guard), never at an address off the machine.
pub struct WebhookSink {
    base: String,
    received: Arc<Mutex<Vec<(String, Value)>>>,
}

impl WebhookSink {
    pub async fn start() -> Self {
        let received = Arc::new(Mutex::new(Vec::new()));
        let kept = received.clone();
        let app = axum::Router::new().fallback(move |uri: axum::http::Uri, body: axum::body::Bytes| {
            let kept = kept.clone();
            async move {
                let json = serde_json::from_slice(&body).unwrap_or(Value::Null);
                kept.lock().expect("lock").push((uri.path().to_owned(), json));
                axum::http::StatusCode::NO_CONTENT
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move { axum::serve(listener, app).await.expect("serve") });
        Self { base: format!("http://{addr}"), received }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// What arrived so far: (path, body) in arrival order.
    pub fn received(&self) -> Vec<(String, Value)> {
        self.received.lock().expect("lock").clone()
    }

    /// Wait (up to 30 s) until `done` holds of what arrived.
    pub async fn wait_until(
        &self,
        what: &str,
        done: impl Fn(&[(String, Value)]) -> bool,
    ) -> Vec<(String, Value)> {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let received = self.received();
            if done(&received) {
                return received;
            }
            assert!(std::time::Instant::now() < deadline, "never {what}; received: {received:#?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// An engine as `agentd serve` builds it, over `store` (metrics of its own).
pub fn engine_for(config: &Config, store: &Store) -> Engine {
    let vault = std::sync::Arc::new(Vault::new(store.clone(), config.secrets_key.clone()));
    agentd::app::build_engine(config, store, vault, std::sync::Arc::new(Metrics::default())).expect("engine")
}

impl TestApp {
    /// Serve the app for `pool` with the test configuration.
    pub async fn spawn(pool: PgPool) -> Self {
        Self::spawn_with(pool, test_config()).await
    }

    /// Serve the app with API keys; requests carry the first key unless told otherwise.
    pub async fn spawn_with_keys(pool: PgPool, keys: &str) -> Self {
        let mut config = test_config();
        config.api_keys = ApiKeys::parse(keys);
        let mut app = Self::spawn_with(pool, config).await;
        app.api_key = keys.split(',').next().map(str::to_owned);
        app
    }

    /// Serve the API as `agentd serve --role api` does: the same composition root and accept
    /// loop, on a free loopback port (runs are executed by the tests' own engines and pools).
    pub async fn spawn_with(pool: PgPool, config: Config) -> Self {
        Self::spawn_on(Store::new(pool), config).await
    }

    /// [`TestApp::spawn_with`] over any store (one that cannot reach its database, say).
    pub async fn spawn_on(store: Store, config: Config) -> Self {
        let config = Config { role: Role::Api, ..config };
        let app = App::assemble(config, store, CancellationToken::new()).expect("assemble the app");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move { app.run(Some(listener)).await.expect("serve") });
        let client = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().expect("client");
        Self { base: format!("http://{addr}"), client, api_key: None }
    }

    /// Serve the whole app (API, workers, scheduler) as `agentd serve` does, on `clock`.
    pub async fn spawn_full(
        pool: PgPool,
        config: Config,
        clock: std::sync::Arc<dyn agentd::domain::schedule::Clock>,
    ) -> Self {
        let config = Config { role: Role::All, ..config };
        let app = App::assemble_with_clock(config, Store::new(pool), CancellationToken::new(), clock)
            .expect("assemble the app");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move { app.run(Some(listener)).await.expect("serve") });
        let client = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().expect("client");
        Self { base: format!("http://{addr}"), client, api_key: None }
    }

    /// A server already running at `base` (a child process), asked without a key.
    pub fn at(base: &str) -> TestApp {
        let client = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().expect("client");
        TestApp { base: base.to_owned(), client, api_key: None }
    }

    /// The same server, asked with `key` (`None`: with no key).
    pub fn as_key(&self, key: Option<&str>) -> TestApp {
        TestApp { base: self.base.clone(), client: self.client.clone(), api_key: key.map(str::to_owned) }
    }

    /// The key requests carry.
    pub fn key(&self) -> Option<&str> {
        self.api_key.as_deref()
    }

    pub fn request(&self, method: Method, path: &str) -> RequestBuilder {
        let builder = self.client.request(method, format!("{}{path}", self.base));
        match &self.api_key {
            Some(key) => builder.bearer_auth(key),
            None => builder,
        }
    }

    pub async fn get(&self, path: &str) -> Response {
        self.request(Method::GET, path).send().await.expect("GET")
    }

    pub async fn post_json(&self, path: &str, body: &Value) -> Response {
        self.request(Method::POST, path).json(body).send().await.expect("POST")
    }

    pub async fn put_json(&self, path: &str, body: &Value) -> Response {
        self.request(Method::PUT, path).json(body).send().await.expect("PUT")
    }

    pub async fn delete(&self, path: &str) -> Response {
        self.request(Method::DELETE, path).send().await.expect("DELETE")
    }

    /// Kick off `crew` with `inputs`; asserts 202 and returns the run.
    pub async fn kickoff(&self, crew: &Value, inputs: Value) -> Value {
        let response = self.post_json("/v1/kickoffs", &json!({"crew": crew, "inputs": inputs})).await;
        expect_json(response, StatusCode::ACCEPTED).await
    }
}

/// Assert the status and return the JSON body.
pub async fn expect_json(response: Response, status: StatusCode) -> Value {
    let got = response.status();
    let text = response.text().await.expect("body");
    assert_eq!(got, status, "unexpected status; body: {text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// Assert a problem+json answer with this status; returns the problem.
pub async fn expect_problem(response: Response, status: StatusCode) -> Value {
    let content_type =
        response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let problem = expect_json(response, status).await;
    assert_eq!(content_type, "application/problem+json", "{problem}");
    assert_eq!(problem["status"], status.as_u16(), "{problem}");
    assert!(problem["title"].is_string() && problem["detail"].is_string(), "{problem}");
    assert!(problem["type"].as_str().is_some_and(|t| t.starts_with("/problems/")), "{problem}");
    problem
}

/// The fields named by a validation problem, with their messages.
pub fn problem_fields(problem: &Value) -> BTreeMap<String, String> {
    problem["errors"]
        .as_array()
        .map(|errors| {
            errors
                .iter()
                .map(|e| {
                    (
                        e["field"].as_str().unwrap_or("").to_owned(),
                        e["message"].as_str().unwrap_or("").to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A valid two-agent, two-task crew that uses `{topic}` and `{audience}`.
pub fn sample_crew() -> Value {
    json!({
        "name": "trip-planner",
        "agents": [
            {"name": "researcher", "role": "Senior researcher", "goal": "Find facts about {topic}",
             "backstory": "Curious.", "llm": "openai/gpt-4o-mini", "tools": ["calculator", "lookup_order"]},
            {"name": "writer", "role": "Writer", "goal": "Write for {audience}", "backstory": "Clear.",
             "llm": {"model": "local/llama3", "temperature": 0.2, "max_tokens": 512}}
        ],
        "tasks": [
            {"name": "research", "description": "Research {topic}", "expected_output": "Three bullets",
             "agent": "researcher"},
            {"name": "write", "description": "Write it up", "expected_output": "A paragraph",
             "agent": "writer", "context": ["research"],
             "output_schema": {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}}
        ],
        "tools": [{
            "name": "lookup_order", "description": "Look up an order by id",
            "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
            "http": {"url": "http://127.0.0.1:9/lookup", "method": "POST", "timeout_ms": 10000}
        }]
    })
}

pub fn sample_inputs() -> Value {
    json!({"topic": "AI agents", "audience": "engineers"})
}

/// A validated run of the sample crew, ready for `Store::create_run`.
pub fn new_run() -> NewRun {
    let ctx = ValidationContext {
        builtin_tools: agentd::tools::builtin_tool_names(),
        providers: vec!["openai".into(), "local".into()],
        fake_providers: Vec::new(),
        default_model: "openai/gpt-4o-mini".into(),
        limits: agentd::domain::CrewLimits::default(),
    };
    let crew = CrewSpec::from_json(sample_crew()).expect("spec");
    let Value::Object(inputs) = sample_inputs() else { panic!("inputs") };
    prepare_run(crew, inputs, Default::default(), None, &agentd::domain::DEFAULT_TENANT_ID, &ctx)
        .expect("valid run")
}

/// An `agent.thought` event saying `text`.
pub fn thought(text: impl Into<String>) -> agentd::domain::EventData {
    agentd::domain::EventData::AgentThought(agentd::domain::event::AgentThought { text: text.into() })
}

/// Every row of every table of the database as text: what a dump of it would show.
pub async fn database_text(pool: &PgPool) -> String {
    // bytea as its bytes (printable ones as themselves), not as hex: a value stored in the clear
    // in a bytea column shows.
    let mut conn = pool.begin().await.expect("a transaction");
    sqlx::query("SET LOCAL bytea_output = 'escape'").execute(&mut *conn).await.expect("escape output");
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT quote_ident(table_name) FROM information_schema.tables \
         WHERE table_schema = 'public' AND table_type = 'BASE TABLE'",
    )
    .fetch_all(&mut *conn)
    .await
    .expect("tables");
    let mut text = String::new();
    for table in tables {
        let rows: Option<String> =
            sqlx::query_scalar(&format!("SELECT string_agg(t::text, E'\\n') FROM {table} t"))
                .fetch_one(&mut *conn)
                .await
                .expect("rows");
        text.push_str(&table);
        text.push('\n');
        text.push_str(&rows.unwrap_or_default());
        text.push('\n');
    }
    text
}

/// One change of a provider's shared schedule (`rate_schedules`), as [`log_rate_bookings`] logs
/// them: the key's next free time before and after (seconds since the epoch; before is
/// `-inf` for a key's first booking) and when it changed.
#[derive(Debug, Clone, Copy)]
pub struct RateChange {
    pub before: f64,
    pub after: f64,
    pub at: f64,
}

impl RateChange {
    /// When the call booked by this change may start, if it booked `cost` seconds: its new
    /// next free time less its cost.
    pub fn start(&self, cost: f64) -> f64 {
        self.after - cost
    }
}

/// Log every change of the shared schedules of the database behind `pool` (a trigger of the
/// test's own, beside the product's tables): the schedule the cluster booked, as it was booked.
pub async fn log_rate_bookings(pool: &PgPool) {
    sqlx::raw_sql(
        "CREATE TABLE test_rate_log (seq bigserial PRIMARY KEY, key text NOT NULL,
                                     before float8 NOT NULL, after float8 NOT NULL, at float8 NOT NULL);
         CREATE FUNCTION test_rate_log() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN
             INSERT INTO test_rate_log (key, before, after, at)
             VALUES (NEW.key, extract(epoch FROM OLD.next_at), extract(epoch FROM NEW.next_at),
                     extract(epoch FROM clock_timestamp()));
             RETURN NULL;
         END $$;
         CREATE TRIGGER test_rate_log AFTER UPDATE ON rate_schedules
             FOR EACH ROW EXECUTE FUNCTION test_rate_log();",
    )
    .execute(pool)
    .await
    .expect("install the booking log");
}

/// The changes of `key`'s schedule, in order.
pub async fn rate_changes(pool: &PgPool, key: &str) -> Vec<RateChange> {
    let rows: Vec<(f64, f64, f64)> =
        sqlx::query_as("SELECT before, after, at FROM test_rate_log WHERE key = $1 ORDER BY seq")
            .bind(key)
            .fetch_all(pool)
            .await
            .expect("the booking log");
    rows.into_iter().map(|(before, after, at)| RateChange { before, after, at }).collect()
}
