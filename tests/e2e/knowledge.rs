//! Knowledge bases over HTTP: bases, documents (text, URL, uploads) ingested by the ingester into
//! chunks a search finds, the bad input each route refuses, an ingestion taken over after its
//! lease, crews whose task prompts receive the hits (and the `search_knowledge` tool), and
//! `kill -9` of the real binary mid-ingestion and mid-run.

use std::time::{Duration, Instant};

use agentd::config::Config;
use agentd::fake_llm::{FakeLlm, FakeReply};
use agentd::knowledge::ingest::{IngestSettings, Ingester};
use agentd::store::{Ingested, NewChunk, Store};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;

use crate::support::{expect_json, expect_problem, problem_fields, test_config, TestApp};
use crate::worker::{event_types, fake_config, fast_settings, start_workers, wait_for};

pub const GUIDE: &str = "# Lumen Ledger guide\n\nLumen Ledger keeps the books of small bakeries.\n\n\
## Recurring invoices\n\nRecurring invoices are generated at 02:00 in the company's time zone.\n\n\
## Backups\n\nA nightly backup is written to the vault folder and kept for 35 days.";

/// An ingester like every replica runs, until the returned token is cancelled.
pub fn start_ingester(pool: &PgPool, config: &Config, lease: Duration) -> CancellationToken {
    let outbound = agentd::app::tool_outbound(config).expect("outbound");
    let store = Store::new(pool.clone());
    let llms = agentd::app::build_llms(config, &store).expect("providers").0;
    let metrics = std::sync::Arc::new(agentd::metrics::Metrics::default());
    let knowledge = agentd::knowledge::Knowledge::new(store.clone(), Some(llms), metrics);
    let stop = CancellationToken::new();
    let settings = IngestSettings {
        lease,
        extraction: config.extraction.clone(),
        quarantine_after_deaths: config.quarantine_after_deaths,
    };
    tokio::spawn(Ingester::new(store, outbound, knowledge, settings).run(stop.clone()));
    stop
}

pub async fn create_base(app: &TestApp, name: &str) -> Value {
    expect_json(app.post_json("/v1/knowledge", &json!({"name": name})).await, StatusCode::CREATED).await
}

/// Post `text` to `base`; the pending document.
async fn post_text(app: &TestApp, base: &str, text: &str) -> Value {
    let response = app.post_json(&format!("/v1/knowledge/{base}/documents"), &json!({"text": text})).await;
    expect_json(response, StatusCode::ACCEPTED).await
}

/// Poll a document until it is no longer pending.
pub async fn wait_document(app: &TestApp, base: &str, id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let doc =
            expect_json(app.get(&format!("/v1/knowledge/{base}/documents/{id}")).await, StatusCode::OK).await;
        if doc["status"] != "pending" {
            return doc;
        }
        assert!(Instant::now() < deadline, "document {id} never left pending: {doc}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn search(app: &TestApp, base: &str, q: &str) -> Value {
    let response = app
        .request(Method::GET, &format!("/v1/knowledge/{base}/search"))
        .query(&[("q", q), ("k", "3")])
        .send()
        .await
        .expect("GET");
    expect_json(response, StatusCode::OK).await
}

/// A `multipart/form-data` body with a `file` part (and a `title` part when given).
pub(crate) fn multipart(
    file_name: &str,
    content_type: Option<&str>,
    bytes: &[u8],
    title: Option<&str>,
) -> (String, Vec<u8>) {
    let boundary = "agentd-test-boundary-7MA4YWxkTrZu0gW";
    let mut body = Vec::new();
    if let Some(title) = title {
        body.extend_from_slice(
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\n{title}\r\n")
                .as_bytes(),
        );
    }
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{file_name}\"\r\n"
        )
        .as_bytes(),
    );
    if let Some(content_type) = content_type {
        body.extend_from_slice(format!("Content-Type: {content_type}\r\n").as_bytes());
    }
    body.extend_from_slice(b"\r\n");
    body.extend_from_slice(bytes);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

pub(crate) async fn upload(
    app: &TestApp,
    base: &str,
    file_name: &str,
    content_type: Option<&str>,
    bytes: &[u8],
) -> reqwest::Response {
    let (content_type, body) = multipart(file_name, content_type, bytes, None);
    app.request(Method::POST, &format!("/v1/knowledge/{base}/documents"))
        .header("content-type", content_type)
        .body(body)
        .send()
        .await
        .expect("POST")
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn knowledge_bases_are_created_listed_read_and_deleted_and_bad_ones_refused(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let response = app
        .post_json("/v1/knowledge", &json!({"name": "docs", "description": "Product docs", "chunking": {"max_tokens": 128, "overlap": 16}}))
        .await;
    assert_eq!(response.headers()["location"], "/v1/knowledge/docs");
    let created = expect_json(response, StatusCode::CREATED).await;
    assert_eq!(created["chunking"], json!({"max_tokens": 128, "overlap": 16}));
    assert_eq!((created["documents"].as_i64(), created["embedding"].clone()), (Some(0), Value::Null));
    create_base(&app, "another").await;
    let list = expect_json(app.get("/v1/knowledge").await, StatusCode::OK).await;
    let names: Vec<&str> = list["knowledge_bases"]
        .as_array()
        .expect("list")
        .iter()
        .map(|b| b["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["another", "docs"]);
    let one = expect_json(app.get("/v1/knowledge/docs").await, StatusCode::OK).await;
    assert_eq!(one["description"], "Product docs");

    let conflict =
        expect_problem(app.post_json("/v1/knowledge", &json!({"name": "docs"})).await, StatusCode::CONFLICT)
            .await;
    assert!(conflict["detail"].as_str().is_some_and(|d| d.contains("docs")), "{conflict}");
    let bad = [
        (json!({"name": "a/b"}), "name"),
        (json!({"name": ""}), "name"),
        (json!({"name": "x", "chunking": {"max_tokens": 8}}), "chunking.max_tokens"),
        (json!({"name": "x", "chunking": {"max_tokens": 64, "overlap": 64}}), "chunking.overlap"),
        (json!({"name": "x", "embedding": "openai/text-embedding-3-small"}), "embedding"),
        (json!({"name": "x", "colour": "blue"}), "colour"),
        (json!({"name": "x", "description": "d".repeat(5000)}), "description"),
    ];
    for (body, field) in bad {
        let problem =
            expect_problem(app.post_json("/v1/knowledge", &body).await, StatusCode::UNPROCESSABLE_ENTITY)
                .await;
        assert!(problem_fields(&problem).contains_key(field), "{body}: {problem}");
    }
    expect_problem(app.get("/v1/knowledge/nope").await, StatusCode::NOT_FOUND).await;
    expect_problem(app.get("/v1/knowledge/..").await, StatusCode::NOT_FOUND).await;

    assert_eq!(app.delete("/v1/knowledge/docs").await.status(), StatusCode::NO_CONTENT);
    expect_problem(app.get("/v1/knowledge/docs").await, StatusCode::NOT_FOUND).await;
    expect_problem(app.delete("/v1/knowledge/docs").await, StatusCode::NOT_FOUND).await;
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn documents_are_ingested_into_chunks_a_search_finds(pool: PgPool) {
    let config = test_config();
    let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
    let ingester = start_ingester(&pool, &config, Duration::from_secs(5));
    create_base(&app, "docs").await;

    let posted = post_text(&app, "docs", GUIDE).await;
    assert_eq!((posted["status"].as_str(), posted["source"].as_str()), (Some("pending"), Some("text")));
    assert_eq!(posted["title"], "Lumen Ledger guide");
    let id = posted["id"].as_str().expect("id");
    let ready = wait_document(&app, "docs", id).await;
    assert_eq!(ready["status"], "ready", "{ready}");
    assert_eq!(ready["chunks"], 3, "one chunk per section: {ready}");
    assert!(ready["tokens"].as_i64().is_some_and(|t| t > 20), "{ready}");
    // The same text again is the same document.
    let again =
        app.post_json("/v1/knowledge/docs/documents", &json!({"text": GUIDE, "title": "Other"})).await;
    assert_eq!(expect_json(again, StatusCode::OK).await["id"], posted["id"]);

    let found = search(&app, "docs", "When are repeating invoices created each night?").await;
    assert_eq!(found["mode"], "fulltext");
    let top = &found["hits"][0];
    assert!(top["text"].as_str().is_some_and(|t| t.contains("02:00")), "{found}");
    assert_eq!(
        (top["title"].as_str(), top["heading"].as_str()),
        (Some("Lumen Ledger guide"), Some("Lumen Ledger guide > Recurring invoices"))
    );
    assert_eq!(top["document_id"], posted["id"]);
    let backups = search(&app, "docs", "how long are backups kept").await;
    assert!(backups["hits"][0]["text"].as_str().is_some_and(|t| t.contains("35 days")), "{backups}");
    assert_eq!(search(&app, "docs", "zebra xylophone").await["hits"], json!([]));

    // Uploads: Markdown by extension, HTML, CSV and JSON by their types.
    let html = b"<html><head><title>Receipts</title></head><body><h1>Receipts</h1><p>Logos print at 384 dots wide.</p><script>alert(1)</script></body></html>";
    let csv = b"code,meaning\nLL-4012,The bank feed token expired\nLL-5001,The printer is offline\n";
    let json_doc = br#"{"plans": [{"name": "Crumb", "price_eur": 9}, {"name": "Loaf", "price_eur": 29}]}"#;
    let uploads: [(&str, Option<&str>, &[u8], &str); 4] = [
        ("shortcuts.md", None, b"# Shortcuts\n\nPress Ctrl+K to open the command palette.", "Shortcuts"),
        ("receipts.html", Some("text/html; charset=utf-8"), html, "Receipts"),
        ("codes.csv", Some("text/csv"), csv, "codes.csv"),
        ("plans.json", Some("application/json"), json_doc, "plans.json"),
    ];
    for (name, content_type, bytes, title) in uploads {
        let accepted =
            expect_json(upload(&app, "docs", name, content_type, bytes).await, StatusCode::ACCEPTED).await;
        assert_eq!(accepted["source"], "upload");
        assert_eq!(accepted["bytes"].as_u64(), Some(bytes.len() as u64));
        let done = wait_document(&app, "docs", accepted["id"].as_str().expect("id")).await;
        assert_eq!((done["status"].as_str(), done["title"].as_str()), (Some("ready"), Some(title)), "{done}");
    }
    let palette = search(&app, "docs", "command palette keyboard").await;
    assert!(palette["hits"][0]["text"].as_str().is_some_and(|t| t.contains("Ctrl+K")), "{palette}");
    let logo = search(&app, "docs", "logo width dots").await;
    let logo_text = logo["hits"][0]["text"].as_str().expect("hit");
    assert!(logo_text.contains("384 dots") && !logo_text.contains("alert"), "{logo}");
    let code = search(&app, "docs", "LL-4012").await;
    assert!(
        code["hits"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("code: LL-4012; meaning: The bank feed token expired")),
        "{code}"
    );
    let plan = search(&app, "docs", "Loaf price").await;
    assert!(plan["hits"][0]["text"].as_str().is_some_and(|t| t.contains("plans[1].price_eur: 29")), "{plan}");

    let list = expect_json(app.get("/v1/knowledge/docs/documents").await, StatusCode::OK).await;
    assert_eq!(list["documents"].as_array().map(Vec::len), Some(5));
    assert_eq!(list["documents"][4]["id"], posted["id"], "newest first");
    let base = expect_json(app.get("/v1/knowledge/docs").await, StatusCode::OK).await;
    assert_eq!(base["documents"], 5);

    // A deleted document is searched no more; so is everything of a deleted base.
    assert_eq!(
        app.delete(&format!("/v1/knowledge/docs/documents/{id}")).await.status(),
        StatusCode::NO_CONTENT
    );
    expect_problem(app.get(&format!("/v1/knowledge/docs/documents/{id}")).await, StatusCode::NOT_FOUND).await;
    expect_problem(app.delete(&format!("/v1/knowledge/docs/documents/{id}")).await, StatusCode::NOT_FOUND)
        .await;
    assert_eq!(search(&app, "docs", "backups kept").await["hits"], json!([]));
    // A base without an embedding model cannot be searched by vectors: 409, saying why.
    for mode in ["vector", "hybrid"] {
        let response = app
            .request(Method::GET, "/v1/knowledge/docs/search")
            .query(&[("q", "backups"), ("mode", mode)])
            .send()
            .await
            .expect("GET");
        let problem = expect_problem(response, StatusCode::CONFLICT).await;
        assert!(problem["detail"].as_str().is_some_and(|d| d.contains("no embedding model")), "{problem}");
    }
    assert_eq!(app.delete("/v1/knowledge/docs").await.status(), StatusCode::NO_CONTENT);
    let left: i64 =
        sqlx::query_scalar("SELECT count(*) FROM knowledge_chunks").fetch_one(&pool).await.expect("count");
    let documents: i64 =
        sqlx::query_scalar("SELECT count(*) FROM knowledge_documents").fetch_one(&pool).await.expect("count");
    assert_eq!((left, documents), (0, 0), "the base's documents and chunks are gone");
    ingester.cancel();
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn bad_documents_are_refused_or_fail_with_the_reason(pool: PgPool) {
    let mut config = test_config();
    config.max_document_bytes = 4096;
    let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
    let ingester = start_ingester(&pool, &config, Duration::from_secs(5));
    create_base(&app, "docs").await;
    let path = "/v1/knowledge/docs/documents";

    let refused = [
        (json!({"text": "  \n "}), "text"),
        (json!({"text": "a", "url": "http://127.0.0.1:9/a"}), ""),
        (json!({}), ""),
        (json!({"title": "", "text": "a"}), "title"),
        (json!({"url": "ftp://127.0.0.1/a"}), "url"),
        (json!({"url": "http://127.0.0.1:8080/secret"}), "url"),
        (json!({"url": "http://169.254.169.254/latest/meta-data"}), "url"),
        (json!({"text": "a", "page": 1}), "page"),
    ];
    for (body, field) in refused {
        let problem =
            expect_problem(app.post_json(path, &body).await, StatusCode::UNPROCESSABLE_ENTITY).await;
        assert!(problem_fields(&problem).contains_key(field), "{body}: {problem}");
    }
    let nul = app.post_json(path, &json!({"text": "a\u{0}b"})).await;
    expect_problem(nul, StatusCode::UNPROCESSABLE_ENTITY).await;
    expect_problem(
        app.post_json("/v1/knowledge/nope/documents", &json!({"text": "a"})).await,
        StatusCode::NOT_FOUND,
    )
    .await;
    let form = app
        .request(Method::POST, path)
        .header("content-type", "text/plain")
        .body("hello")
        .send()
        .await
        .expect("POST");
    expect_problem(form, StatusCode::UNSUPPORTED_MEDIA_TYPE).await;
    let too_long = app.post_json(path, &json!({"text": "x".repeat(5000)})).await;
    expect_problem(too_long, StatusCode::PAYLOAD_TOO_LARGE).await;

    // Uploads: unsupported types, an oversized file, an empty one, no file part.
    let png = expect_problem(
        upload(&app, "docs", "logo.png", Some("image/png"), b"\x89PNG").await,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
    )
    .await;
    assert!(
        png["detail"].as_str().is_some_and(|d| d.contains("image/png") && d.contains("text/markdown")),
        "{png}"
    );
    expect_problem(
        upload(&app, "docs", "archive.zip", Some("application/zip"), b"PK").await,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
    )
    .await;
    let big = vec![b'a'; 5000];
    let problem =
        expect_problem(upload(&app, "docs", "big.txt", None, &big).await, StatusCode::PAYLOAD_TOO_LARGE)
            .await;
    assert!(problem["detail"].as_str().is_some_and(|d| d.contains("4096")), "{problem}");
    let empty =
        expect_problem(upload(&app, "docs", "empty.txt", None, b"").await, StatusCode::UNPROCESSABLE_ENTITY)
            .await;
    assert!(problem_fields(&empty).contains_key("file"), "{empty}");
    let boundary = "b0undary";
    let no_file = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nT\r\n--{boundary}--\r\n"
    );
    let response = app
        .request(Method::POST, path)
        .header("content-type", format!("multipart/form-data; boundary={boundary}"))
        .body(no_file)
        .send()
        .await
        .expect("POST");
    let missing = expect_problem(response, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(problem_fields(&missing).contains_key("file"), "{missing}");
    let garbled = app
        .request(Method::POST, path)
        .header("content-type", format!("multipart/form-data; boundary={boundary}"))
        .body("not multipart at all")
        .send()
        .await
        .expect("POST");
    expect_problem(garbled, StatusCode::BAD_REQUEST).await;

    // Refused at once for what its content is: text that is not UTF-8.
    let latin1 = expect_problem(
        upload(&app, "docs", "latin1.txt", None, b"caf\xe9").await,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
    )
    .await;
    assert!(latin1["detail"].as_str().is_some_and(|d| d.contains("not UTF-8")), "{latin1}");
    // Accepted, then failed with the reason: no text, invalid JSON, a host that resolves to a
    // private address.
    let failing: [(&str, Option<&str>, &[u8], &str); 2] = [
        ("blank.html", None, b"<html><script>var x;</script></html>", "the document has no text"),
        ("broken.json", None, b"{\"a\": ", "not valid JSON"),
    ];
    for (name, content_type, bytes, reason) in failing {
        let accepted =
            expect_json(upload(&app, "docs", name, content_type, bytes).await, StatusCode::ACCEPTED).await;
        let failed = wait_document(&app, "docs", accepted["id"].as_str().expect("id")).await;
        assert_eq!(failed["status"], "failed", "{failed}");
        assert!(failed["error"].as_str().is_some_and(|e| e.contains(reason)), "{name}: {failed}");
    }
    let private = app.post_json(path, &json!({"url": "http://localhost:9/notes.md"})).await;
    let private = expect_json(private, StatusCode::ACCEPTED).await;
    let failed = wait_document(&app, "docs", private["id"].as_str().expect("id")).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert!(
        failed["error"]
            .as_str()
            .is_some_and(|e| e.contains("private") || e.contains("not allowed") || e.contains("blocked")),
        "{failed}"
    );
    let base = expect_json(app.get("/v1/knowledge/docs").await, StatusCode::OK).await;
    assert_eq!(base["chunks"], 0, "nothing failed left a chunk: {base}");
    ingester.cancel();
}

/// A server of one Markdown document, on loopback, counting its requests.
async fn document_server(
    body: &'static str,
    delay: Duration,
) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let hits = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    let app = axum::Router::new().route(
        "/guide.md",
        axum::routing::get(move || {
            let counter = counter.clone();
            async move {
                let n = counter.fetch_add(1, Ordering::SeqCst);
                if n == 0 {
                    tokio::time::sleep(delay).await;
                }
                ([("content-type", "text/markdown")], body)
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await.expect("serve") });
    (format!("http://{addr}/guide.md"), hits)
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_url_document_is_fetched_through_the_egress_guard(pool: PgPool) {
    let mut config = test_config();
    config.tool_egress = crate::support::loopback_egress();
    let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
    let ingester = start_ingester(&pool, &config, Duration::from_secs(5));
    create_base(&app, "docs").await;
    let (url, hits) = document_server(GUIDE, Duration::ZERO).await;
    let posted = app.post_json("/v1/knowledge/docs/documents", &json!({"url": url})).await;
    let posted = expect_json(posted, StatusCode::ACCEPTED).await;
    assert_eq!((posted["source"].as_str(), posted["url"].as_str()), (Some("url"), Some(url.as_str())));
    let ready = wait_document(&app, "docs", posted["id"].as_str().expect("id")).await;
    assert_eq!(
        (ready["status"].as_str(), ready["title"].as_str(), ready["chunks"].as_i64()),
        (Some("ready"), Some("Lumen Ledger guide"), Some(3)),
        "{ready}"
    );
    assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 1);
    let again = app.post_json("/v1/knowledge/docs/documents", &json!({"url": url})).await;
    assert_eq!(expect_json(again, StatusCode::OK).await["id"], posted["id"]);
    let found = search(&app, "docs", "nightly backup retention").await;
    assert!(found["hits"][0]["text"].as_str().is_some_and(|t| t.contains("35 days")), "{found}");
    ingester.cancel();
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn an_interrupted_ingestion_is_taken_over_after_its_lease_and_the_first_attempt_is_fenced(
    pool: PgPool,
) {
    let config = test_config();
    let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
    create_base(&app, "docs").await;
    let posted = post_text(&app, "docs", GUIDE).await;
    let id: uuid::Uuid = posted["id"].as_str().expect("id").parse().expect("uuid");
    // A replica leases the document and dies (it never writes).
    let store = Store::new(pool.clone());
    let leased = store.lease_documents(10, Duration::from_millis(500)).await.expect("lease");
    assert_eq!((leased.len(), leased[0].id, leased[0].attempt), (1, id, 1));
    assert!(
        store.lease_documents(10, Duration::from_secs(5)).await.expect("lease").is_empty(),
        "held by its lease"
    );
    let ingester = start_ingester(&pool, &config, Duration::from_secs(5));
    let ready = wait_document(&app, "docs", &id.to_string()).await;
    assert_eq!(ready["status"], "ready", "{ready}");
    let attempts: i32 = sqlx::query_scalar("SELECT attempts FROM knowledge_documents WHERE id = $1")
        .bind(id)
        .fetch_one(&pool)
        .await
        .expect("attempts");
    assert_eq!(attempts, 2);
    // The dead replica's late write is refused: nothing of it is seen.
    let late = Ingested {
        chunks: vec![NewChunk { heading: String::new(), text: "stale".into(), tokens: 1 }],
        vectors: None,
        title: None,
    };
    assert!(!store.finish_document(agentd::domain::DocumentId(id), 1, &late).await.expect("finish"));
    assert!(!store.fail_document(agentd::domain::DocumentId(id), 1, "stale").await.expect("fail"));
    let base = expect_json(app.get("/v1/knowledge/docs").await, StatusCode::OK).await;
    assert_eq!(base["chunks"], 3, "{base}");
    ingester.cancel();
}

/// A crew whose agent knows the `docs` base.
fn knowledge_crew(tools: Value) -> Value {
    json!({
        "name": "support",
        "knowledge": ["docs"],
        "agents": [{"name": "a", "role": "Support agent", "goal": "Answer", "backstory": "Knows the product.", "tools": tools}],
        "tasks": [{"name": "answer", "description": "A customer asks: {question}", "expected_output": "A short answer", "agent": "a"}]
    })
}

/// The text of every message of the fake's `n`th request.
fn request_text(fake: &FakeLlm, n: usize) -> String {
    fake.requests()[n]["messages"].to_string()
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_crew_with_knowledge_sees_the_hits_in_its_prompt_and_the_events_name_them(pool: PgPool) {
    let fake = FakeLlm::start().await.expect("fake");
    fake.push([
        FakeReply::tool_calls(&[("c1", "search_knowledge", json!({"query": "backup retention days"}))]),
        FakeReply::text("Invoices recur at 02:00; backups stay 35 days."),
    ]);
    let config = fake_config(&fake);
    let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
    let ingester = start_ingester(&pool, &config, Duration::from_secs(5));
    // A crew naming a base the tenant does not have is refused at kickoff.
    let refused = app
        .post_json("/v1/kickoffs", &json!({"crew": knowledge_crew(json!([])), "inputs": {"question": "q"}}))
        .await;
    let problem = expect_problem(refused, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert_eq!(
        problem_fields(&problem).get("crew.knowledge[0]").map(String::as_str),
        Some("no knowledge base named 'docs'")
    );

    create_base(&app, "docs").await;
    let posted = post_text(&app, "docs", GUIDE).await;
    wait_document(&app, "docs", posted["id"].as_str().expect("id")).await;
    let workers = start_workers(&pool, &config, fast_settings(2, Duration::from_secs(5)));
    let run = app
        .kickoff(
            &knowledge_crew(json!(["search_knowledge"])),
            json!({"question": "At what time are recurring invoices generated?"}),
        )
        .await;
    let id = run["id"].as_str().expect("id");
    let done = wait_for(&app, id, &["completed", "failed"]).await;
    assert_eq!(done["status"], "completed", "{done}");

    // The first prompt holds the seed's section with the chunk about recurring invoices.
    let first = fake.requests()[0]["messages"].clone();
    let user =
        first.as_array().expect("messages").iter().find(|m| m["role"] == "user").expect("user message");
    let prompt = user["content"].as_str().expect("text");
    let (task, knowledge) = prompt.split_once("\n\n# Relevant Knowledge:\n").expect("the knowledge section");
    assert!(task.contains("At what time are recurring invoices generated?"), "{prompt}");
    assert!(knowledge.contains("## Lumen Ledger guide (Lumen Ledger guide > Recurring invoices)\nRecurring invoices are generated at 02:00"), "{knowledge}");
    // The tool's answer reached the model.
    let second = request_text(&fake, 1);
    assert!(second.contains("kept for 35 days"), "{second}");

    let events =
        expect_json(app.get(&format!("/v1/runs/{id}/events?limit=1000")).await, StatusCode::OK).await;
    let types = event_types(&events);
    let at = |t: &str| types.iter().position(|x| x == t).unwrap_or_else(|| panic!("no {t} in {types:?}"));
    assert!(
        at("task.started") < at("knowledge.retrieved") && at("knowledge.retrieved") < at("llm.started"),
        "{types:?}"
    );
    let retrieved = events["events"]
        .as_array()
        .expect("events")
        .iter()
        .find(|e| e["type"] == "knowledge.retrieved")
        .expect("event");
    assert_eq!(
        (retrieved["data"]["task"].as_str(), retrieved["data"]["base"].as_str()),
        (Some("answer"), Some("docs"))
    );
    let hits = retrieved["data"]["hits"].as_array().expect("hits");
    assert!(
        !hits.is_empty() && hits.iter().all(|h| h["score"].as_f64().is_some_and(|s| s > 0.0)),
        "{retrieved}"
    );
    let found = search(&app, "docs", "At what time are recurring invoices generated?").await;
    assert_eq!(hits[0]["chunk_id"], found["hits"][0]["chunk_id"], "the event names the chunk the prompt got");
    // The retrieval and the tool call are journaled like any call.
    let calls = expect_json(app.get(&format!("/v1/runs/{id}/tool-calls")).await, StatusCode::OK).await;
    let tools: Vec<&str> = calls["tool_calls"]
        .as_array()
        .expect("calls")
        .iter()
        .map(|c| c["tool"].as_str().expect("tool"))
        .collect();
    assert_eq!(tools, ["knowledge", "search_knowledge"]);
    // The retrieval is a side record of the journal, not a tool-call row.
    let (calls, records): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM tool_calls WHERE run_id = $1), (SELECT count(*) FROM side_records WHERE run_id = $1 AND kind = 'knowledge')",
    )
    .bind(uuid::Uuid::parse_str(id).expect("id"))
    .fetch_one(&pool)
    .await
    .expect("counts");
    assert_eq!((calls, records), (1, 1));
    workers.shutdown().await;
    ingester.cancel();
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn another_tenant_sees_nothing_of_a_knowledge_base(pool: PgPool) {
    let mut config = test_config();
    config.api_keys = agentd::config::ApiKeys::parse("root-key-for-knowledge-tests");
    let root =
        TestApp::spawn_with(pool.clone(), config.clone()).await.as_key(Some("root-key-for-knowledge-tests"));
    let ingester = start_ingester(&pool, &config, Duration::from_secs(5));
    let mut keys = Vec::new();
    for tenant in ["team-a", "team-b"] {
        expect_json(root.post_json("/v1/tenants", &json!({"name": tenant})).await, StatusCode::CREATED).await;
        let body = json!({"tenant": tenant, "name": "k", "scopes": ["read", "kickoff", "manage"]});
        let key = expect_json(root.post_json("/v1/keys", &body).await, StatusCode::CREATED).await;
        keys.push(key["key"].as_str().expect("key").to_owned());
    }
    let (a, b) = (root.as_key(Some(&keys[0])), root.as_key(Some(&keys[1])));
    create_base(&a, "docs").await;
    let posted = post_text(&a, "docs", GUIDE).await;
    let id = posted["id"].as_str().expect("id");
    wait_document(&a, "docs", id).await;
    // B: no such base, document, search or list entry; B may make its own base of that name.
    expect_problem(b.get("/v1/knowledge/docs").await, StatusCode::NOT_FOUND).await;
    expect_problem(b.get(&format!("/v1/knowledge/docs/documents/{id}")).await, StatusCode::NOT_FOUND).await;
    let search_b = b.request(Method::GET, "/v1/knowledge/docs/search?q=backups").send().await.expect("GET");
    expect_problem(search_b, StatusCode::NOT_FOUND).await;
    expect_problem(b.delete("/v1/knowledge/docs").await, StatusCode::NOT_FOUND).await;
    assert_eq!(expect_json(b.get("/v1/knowledge").await, StatusCode::OK).await["knowledge_bases"], json!([]));
    let kickoff = b
        .post_json("/v1/kickoffs", &json!({"crew": knowledge_crew(json!([])), "inputs": {"question": "q"}}))
        .await;
    expect_problem(kickoff, StatusCode::UNPROCESSABLE_ENTITY).await;
    create_base(&b, "docs").await;
    assert_eq!(search(&b, "docs", "backups kept").await["hits"], json!([]), "B's own base is empty");
    // A still has everything, and its audit log records the changes.
    assert!(search(&a, "docs", "backups kept").await["hits"][0]["text"]
        .as_str()
        .is_some_and(|t| t.contains("35 days")));
    let audit = expect_json(root.get("/v1/audit?tenant=team-a").await, StatusCode::OK).await;
    let actions: Vec<&str> = audit["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|r| r["action"].as_str().expect("action"))
        .collect();
    assert!(actions.contains(&"knowledge.create") && actions.contains(&"document.create"), "{actions:?}");
    ingester.cancel();
}

/// `kill -9` of the real binary while it fetches a document, and again while a crew with
/// knowledge waits for its model: the document is ingested by the next process (once), and the
/// resumed run's prompt is the journaled one, not a new search (the document is gone by then).
#[sqlx::test(migrations = false)]
async fn kill_9_mid_ingestion_and_mid_run_loses_nothing_and_searches_once(pool: PgPool) {
    use crate::cli::{child_database_url, Agentd};
    let url = child_database_url(&pool).await;
    let (doc_url, fetches) = document_server(GUIDE, Duration::from_secs(60)).await;
    let fake = FakeLlm::start().await.expect("fake");
    fake.push([
        FakeReply::text("never delivered").with_delay(Duration::from_secs(60)),
        FakeReply::text("At 02:00, after the restart."),
    ]);
    let fake_url = fake.base_url();
    let env = [
        ("OPENAI_BASE_URL", fake_url.as_str()),
        ("OPENAI_API_KEY", "sk-knowledge-crash"),
        ("AGENTD_LEASE_S", "2"),
        ("AGENTD_ALLOW_PRIVATE_TOOL_HOSTS", "127.0.0.1/32"),
    ];
    let first = Agentd::start(&url, &env);
    let api = crate::support::TestApp::at(&first.base);
    create_base(&api, "docs").await;
    let posted = api.post_json("/v1/knowledge/docs/documents", &json!({"url": doc_url})).await;
    let id = expect_json(posted, StatusCode::ACCEPTED).await["id"].as_str().expect("id").to_owned();
    let deadline = Instant::now() + Duration::from_secs(20);
    while fetches.load(std::sync::atomic::Ordering::SeqCst) == 0 {
        assert!(Instant::now() < deadline, "the document was never fetched");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    first.signal("-KILL").await;

    let second = Agentd::start(&url, &env);
    let api = crate::support::TestApp::at(&second.base);
    let ready = wait_document(&api, "docs", &id).await;
    assert_eq!((ready["status"].as_str(), ready["chunks"].as_i64()), (Some("ready"), Some(3)), "{ready}");
    assert_eq!(fetches.load(std::sync::atomic::Ordering::SeqCst), 2, "fetched again by the second process");
    let attempts: i32 = sqlx::query_scalar("SELECT attempts FROM knowledge_documents")
        .fetch_one(&pool)
        .await
        .expect("attempts");
    assert_eq!(attempts, 2);

    let run =
        api.kickoff(&knowledge_crew(json!([])), json!({"question": "When do recurring invoices run?"})).await;
    let run_id = run["id"].as_str().expect("id").to_owned();
    crate::worker::wait_requests(&fake, 1).await;
    second.signal("-KILL").await;
    // The document is gone before the run resumes: a new search would find nothing.
    sqlx::query("DELETE FROM knowledge_documents").execute(&pool).await.expect("delete");
    let third = Agentd::start(&url, &env);
    let api = crate::support::TestApp::at(&third.base);
    let done = wait_for(&api, &run_id, &["completed", "failed"]).await;
    assert_eq!((done["status"].as_str(), done["attempt"].as_i64()), (Some("completed"), Some(2)), "{done}");
    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1]["messages"], requests[0]["messages"], "the resumed prompt is the journaled one");
    assert!(
        requests[1]["messages"].to_string().contains("generated at 02:00"),
        "{}",
        requests[1]["messages"]
    );
    let events =
        expect_json(api.get(&format!("/v1/runs/{run_id}/events?limit=1000")).await, StatusCode::OK).await;
    let retrieved = event_types(&events).iter().filter(|t| *t == "knowledge.retrieved").count();
    assert_eq!(retrieved, 1, "searched once");
}

/// A PDF (made by a real PDF writer, `tests/knowledge/pdf/`) is ingested as its pages' text; a
/// PDF without text (a scan) and a broken one fail with the reason.
#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_pdf_upload_is_ingested_page_by_page(pool: PgPool) {
    let config = test_config();
    let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
    let ingester = start_ingester(&pool, &config, Duration::from_secs(5));
    create_base(&app, "docs").await;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/knowledge/pdf");
    let pdf = std::fs::read(root.join("night-jobs.pdf")).expect("fixture");
    let accepted =
        expect_json(upload(&app, "docs", "night-jobs.pdf", None, &pdf).await, StatusCode::ACCEPTED).await;
    let ready = wait_document(&app, "docs", accepted["id"].as_str().expect("id")).await;
    assert_eq!(
        (ready["status"].as_str(), ready["media_type"].as_str()),
        (Some("ready"), Some("application/pdf")),
        "{ready}"
    );
    let hits = search(&app, "docs", "When are backups made?").await;
    assert!(hits["hits"][0]["text"].as_str().is_some_and(|t| t.contains("every Sunday at 04:30")), "{hits}");
    let hits = search(&app, "docs", "recurring invoices generated").await;
    assert!(hits["hits"][0]["text"].as_str().is_some_and(|t| t.contains("generated at 02:00")), "{hits}");

    let scan = std::fs::read(root.join("no-text.pdf")).expect("fixture");
    let broken = &pdf[..pdf.len() / 2];
    for (name, bytes, reason) in [
        ("scan.pdf", scan.as_slice(), "the PDF has no text"),
        ("broken.pdf", broken, "the PDF could not be read"),
    ] {
        let accepted = expect_json(upload(&app, "docs", name, None, bytes).await, StatusCode::ACCEPTED).await;
        let failed = wait_document(&app, "docs", accepted["id"].as_str().expect("id")).await;
        assert_eq!(failed["status"], "failed", "{failed}");
        assert!(failed["error"].as_str().is_some_and(|e| e.contains(reason)), "{name}: {failed}");
    }
    // A "PDF" that is not one is refused at once, for what its content is.
    let fake = expect_problem(
        upload(&app, "docs", "fake.pdf", None, b"just text").await,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
    )
    .await;
    assert!(fake["detail"].as_str().is_some_and(|d| d.contains("not a PDF")), "{fake}");
    ingester.cancel();
}

/// Upload the retrieval corpus (`tests/knowledge/corpus`: 32 documents about an invented
/// product) into `base` and wait until every document is ready.
pub async fn ingest_corpus(app: &TestApp, base: &str) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/knowledge");
    let mut files: Vec<_> =
        std::fs::read_dir(root.join("corpus")).expect("corpus").map(|e| e.expect("entry").path()).collect();
    files.sort();
    let mut ids = Vec::new();
    for file in &files {
        let name = file.file_name().and_then(|n| n.to_str()).expect("name");
        let bytes = std::fs::read(file).expect("read");
        let accepted = expect_json(upload(app, base, name, None, &bytes).await, StatusCode::ACCEPTED).await;
        ids.push(accepted["id"].as_str().expect("id").to_owned());
    }
    for id in &ids {
        assert_eq!(wait_document(app, base, id).await["status"], "ready");
    }
}

/// For each of the corpus' 20 questions (`tests/knowledge/questions.json`), whether `base`'s
/// search (by `mode`, when given) has the passage that answers it in its top 5.
pub async fn corpus_top5(app: &TestApp, base: &str, mode: Option<&str>) -> Vec<bool> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/knowledge");
    let questions: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(root.join("questions.json")).expect("questions"))
            .expect("json");
    assert_eq!(questions.len(), 20);
    let mut found = Vec::new();
    for q in &questions {
        let mut query = vec![("q", q["question"].as_str().expect("question")), ("k", "5")];
        query.extend(mode.map(|mode| ("mode", mode)));
        let response = app
            .request(Method::GET, &format!("/v1/knowledge/{base}/search"))
            .query(&query)
            .send()
            .await
            .expect("GET");
        let hits = expect_json(response, StatusCode::OK).await;
        let answer = q["answer"].as_str().expect("answer");
        let hit = hits["hits"]
            .as_array()
            .expect("hits")
            .iter()
            .any(|h| h["text"].as_str().is_some_and(|t| t.contains(answer)));
        found.push(hit);
    }
    found
}

/// The retrieval corpus (`tests/knowledge/`): 32 documents about an invented product and 20
/// questions, each answered by a known passage. Full-text search alone (the mode of a database
/// without pgvector) finds the passage in its top 5 for the number this prints; the floor below
/// is what it measured when written (half the questions share almost no words with their answer,
/// which full-text search cannot bridge).
#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn full_text_search_finds_the_corpus_answers_it_can_match_by_words(pool: PgPool) {
    let config = test_config();
    let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
    let ingester = start_ingester(&pool, &config, Duration::from_secs(5));
    create_base(&app, "lumen").await;
    ingest_corpus(&app, "lumen").await;
    let found = corpus_top5(&app, "lumen", None).await;
    let count = found.iter().filter(|f| **f).count();
    eprintln!("full-text top-5: {count}/20 (per question: {found:?})");
    assert!(
        count >= FULLTEXT_FLOOR,
        "full-text search found {count}/20, fewer than the {FULLTEXT_FLOOR} it found when measured"
    );
    ingester.cancel();
}

/// What full-text search found of the corpus when measured (16/20 on 2026-12-03: it missed
/// questions 1, 3, 6 and 19, which share at most one word with their answers).
const FULLTEXT_FLOOR: usize = 16;
