//! One tenant's input cannot take the service down: documents are read in a child process (a PDF
//! that nests 50,000 arrays ends the extractor, not the replica), uploads are judged by their
//! content, and work whose replica dies too often is quarantined instead of handed to the next
//! replica (runs and documents). Replicas are the real binary.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentd::fake_llm::{FakeLlm, FakeReply};
use agentd::store::Store;
use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::PgPool;
use tokio::sync::mpsc;

use crate::cli::{child_database_url, Agentd};
use crate::knowledge::{create_base, start_ingester, upload, wait_document, GUIDE};
use crate::support::{expect_json, expect_problem, test_config, TestApp};
use crate::worker::wait_for;

/// Levels of nesting in the hostile PDFs (the issue's: about 100 KB of brackets).
const DEPTH: usize = 50_000;

/// A one-page PDF with a correct cross-reference table: `page_extra` is added to the page's
/// dictionary, `content` is its (uncompressed) content stream.
fn pdf(page_extra: &str, content: &str) -> Vec<u8> {
    let objects = [
        "<< /Type /Catalog /Pages 2 0 R >>".to_owned(),
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_owned(),
        format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> \
             /Contents 4 0 R {page_extra} >>"
        ),
        format!("<< /Length {} >>\nstream\n{content}\nendstream", content.len()),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_owned(),
    ];
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, object) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n{object}\nendobj\n", i + 1).as_bytes());
    }
    let xref = out.len();
    out.extend_from_slice(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes());
    for offset in offsets {
        out.extend_from_slice(format!("{offset:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!("trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n", objects.len() + 1)
            .as_bytes(),
    );
    out
}

/// A PDF whose page dictionary nests [`DEPTH`] arrays.
fn nested_page_pdf() -> Vec<u8> {
    let nest = format!("/Nest {}{}", "[".repeat(DEPTH), "]".repeat(DEPTH));
    pdf(&nest, "BT /F1 12 Tf 72 720 Td (hello) Tj ET")
}

/// A PDF whose content stream nests [`DEPTH`] arrays around a string shown with `TJ`.
fn nested_content_pdf() -> Vec<u8> {
    pdf("", &format!("BT /F1 12 Tf 72 720 Td {}(x){} TJ ET", "[".repeat(DEPTH), "]".repeat(DEPTH)))
}

/// The hostile PDFs really do what the issue says: read in-process on a thread with a normal
/// stack they overflow it (so the server must not read them in its own process). Checked in a
/// child: `agentd extract` dies of it, with the runtime's stack-overflow message.
#[test]
fn the_nested_pdfs_overflow_a_reader_s_stack() {
    use std::io::Write;
    for (name, bytes) in [("page", nested_page_pdf()), ("content", nested_content_pdf())] {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_agentd"))
            .args(["extract", "--media-type", "application/pdf"])
            .env_clear()
            .env("MIMALLOC_ARENA_RESERVE", "0")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn agentd extract");
        let _ = child.stdin.take().expect("stdin").write_all(&bytes);
        let output = child.wait_with_output().expect("wait");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            !output.status.success() && stderr.contains("has overflowed its stack"),
            "{name}: {:?} {stderr} {}",
            output.status,
            String::from_utf8_lossy(&output.stdout)
        );
    }
}

/// Tenants `a` and `b` on a server with the operator's `root` key: their keys.
async fn two_tenants(root: &TestApp) -> (TestApp, TestApp) {
    let mut keys = Vec::new();
    for tenant in ["a", "b"] {
        expect_json(root.post_json("/v1/tenants", &json!({"name": tenant})).await, StatusCode::CREATED).await;
        let body = json!({"tenant": tenant, "name": "test", "scopes": ["read", "kickoff", "manage"]});
        let created = expect_json(root.post_json("/v1/keys", &body).await, StatusCode::CREATED).await;
        keys.push(root.as_key(created["key"].as_str()));
    }
    let b = keys.pop().expect("b");
    let a = keys.pop().expect("a");
    (a, b)
}

fn one_call_crew() -> Value {
    json!({
        "name": "steady",
        "agents": [{"name": "a", "role": "Writer", "goal": "Write", "backstory": "Calm."}],
        "tasks": [{"name": "t", "description": "Say {what}", "expected_output": "A line", "agent": "a"}]
    })
}

#[sqlx::test(migrations = false)]
async fn nested_pdfs_fail_with_a_reason_and_every_replica_keeps_serving(pool: PgPool) {
    let url = child_database_url(&pool).await;
    let fake = FakeLlm::start().await.expect("fake");
    fake.push([FakeReply::text("before, done").with_delay(Duration::from_secs(2))]);
    let fake_url = fake.base_url();
    let env = [
        ("OPENAI_BASE_URL", fake_url.as_str()),
        ("OPENAI_API_KEY", "sk-quarantine"),
        ("AGENTD_API_KEYS", "root-key-for-quarantine"),
    ];
    let mut first = Agentd::start(&url, &env);
    let mut second = Agentd::start(&url, &env);
    let root = TestApp::at(&first.base).as_key(Some("root-key-for-quarantine"));
    let (a, b) = two_tenants(&root).await;
    let b_second = TestApp::at(&second.base).as_key(b.key());
    // Tenant b's run is under way (its model answers in 2 s) while a's documents are read.
    let before = b.kickoff(&one_call_crew(), json!({"what": "before"})).await;
    create_base(&a, "docs").await;
    let a_second = TestApp::at(&second.base).as_key(a.key());
    let mut ids = Vec::new();
    for (app, name, bytes) in
        [(&a, "page.pdf", nested_page_pdf()), (&a_second, "content.pdf", nested_content_pdf())]
    {
        let posted = expect_json(upload(app, "docs", name, None, &bytes).await, StatusCode::ACCEPTED).await;
        ids.push(posted["id"].as_str().expect("id").to_owned());
    }
    for id in &ids {
        let doc = wait_document(&a, "docs", id).await;
        assert_eq!(doc["status"], "failed", "{doc}");
        let error = doc["error"].as_str().unwrap_or_default();
        assert!(error.contains("nests too deeply"), "{doc}");
    }
    assert!(first.alive() && second.alive(), "a replica died reading a document");
    let done = wait_for(&b, before["id"].as_str().expect("id"), &["completed", "failed"]).await;
    assert_eq!(done["status"], "completed", "{done}");
    fake.push([FakeReply::text("after, done")]);
    let after = b_second.kickoff(&one_call_crew(), json!({"what": "after"})).await;
    let done = wait_for(&b_second, after["id"].as_str().expect("id"), &["completed", "failed"]).await;
    assert_eq!(
        (done["status"].as_str(), done["output"]["raw"].as_str()),
        (Some("completed"), Some("after, done"))
    );
    // Both replicas still serve (and a document fine to read is read).
    for app in [&a, &a_second] {
        let posted = app
            .post_json("/v1/knowledge/docs/documents", &json!({"text": format!("{GUIDE} {}", app.base)}))
            .await;
        let id = expect_json(posted, StatusCode::ACCEPTED).await["id"].as_str().expect("id").to_owned();
        assert_eq!(wait_document(app, "docs", &id).await["status"], "ready");
    }
    assert!(first.alive() && second.alive());
}

/// Uploads are judged by what they hold: an executable is refused at once (415) whatever its
/// name or declared type says, a PDF declared as nothing is read as a PDF.
#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn uploads_are_judged_by_their_content(pool: PgPool) {
    let config = test_config();
    let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
    let ingester = start_ingester(&pool, &config, Duration::from_secs(5));
    create_base(&app, "docs").await;
    let mut exe = b"MZ\x90\x00\x03\x00\x00\x00\x04\x00\x00\x00\xff\xff".to_vec();
    exe.extend(std::iter::repeat_n(0u8, 512));
    for (name, declared) in [
        ("setup.exe", None),
        ("setup.exe", Some("application/octet-stream")),
        ("notes.txt", Some("text/plain")),
        ("notes.md", None),
    ] {
        let problem = expect_problem(
            upload(&app, "docs", name, declared, &exe).await,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
        )
        .await;
        assert!(
            problem["detail"].as_str().is_some_and(|d| d.contains("Windows executable")),
            "{name} {declared:?}: {problem}"
        );
    }
    let zip = b"PK\x03\x04\x14\x00\x00\x00\x08\x00".to_vec();
    let problem = expect_problem(
        upload(&app, "docs", "report.pdf", None, &zip).await,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
    )
    .await;
    assert!(
        problem["detail"].as_str().is_some_and(|d| d.contains("ZIP archive") && d.contains("not a PDF")),
        "{problem}"
    );
    let binary = [0xc3u8, 0x28, 0xa0, 0xa1, 0x00, 0xfe];
    let problem =
        expect_problem(upload(&app, "docs", "data", None, &binary).await, StatusCode::UNSUPPORTED_MEDIA_TYPE)
            .await;
    assert!(problem["detail"].as_str().is_some_and(|d| d.contains("not UTF-8")), "{problem}");
    let listed = expect_json(app.get("/v1/knowledge/docs/documents").await, StatusCode::OK).await;
    assert_eq!(listed["documents"].as_array().map(Vec::len), Some(0), "nothing refused was stored: {listed}");
    // A real PDF with no name or type that says so is read as one.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/knowledge/pdf");
    let pdf = std::fs::read(root.join("night-jobs.pdf")).expect("fixture");
    let accepted = expect_json(
        upload(&app, "docs", "scan-0001", Some("application/octet-stream"), &pdf).await,
        StatusCode::ACCEPTED,
    )
    .await;
    assert_eq!(accepted["media_type"], "application/pdf", "{accepted}");
    let ready = wait_document(&app, "docs", accepted["id"].as_str().expect("id")).await;
    assert_eq!(ready["status"], "ready", "{ready}");
    ingester.cancel();
}

/// A tool server whose every call is reported to the test, which kills the replica that made
/// it: a tool that takes its process down.
async fn deadly_tool() -> (String, mpsc::UnboundedReceiver<()>, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = mpsc::unbounded_channel();
    let counter = hits.clone();
    let app = axum::Router::new().route(
        "/explode",
        axum::routing::post(move || {
            let (counter, tx) = (counter.clone(), tx.clone());
            async move {
                counter.fetch_add(1, Ordering::SeqCst);
                let _ = tx.send(());
                tokio::time::sleep(Duration::from_secs(60)).await;
                "never"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await.expect("serve") });
    (format!("http://{addr}/explode"), rx, hits)
}

/// A run whose tool call ends its replica (here: the test kills it as the call arrives) kills
/// at most `quarantine_after_deaths` (2) replicas: the third fails it as quarantined, never calls
/// the tool again, and goes on serving.
#[sqlx::test(migrations = false)]
async fn a_run_that_kills_its_replica_is_quarantined_after_two_deaths(pool: PgPool) {
    let url = child_database_url(&pool).await;
    let fake = FakeLlm::start().await.expect("fake");
    fake.push([
        FakeReply::tool_calls(&[("c1", "explode", json!({}))]),
        // The second attempt replays the journaled answer and makes the call again (it is
        // idempotent); the third makes none. This reply is the fresh run's.
        FakeReply::text("after the quarantine, a fresh run"),
    ]);
    let (tool_url, mut calls, hits) = deadly_tool().await;
    let crew = json!({
        "name": "deadly",
        "agents": [{"name": "a", "role": "Operator", "goal": "Press", "backstory": "Brave.", "tools": ["explode"]}],
        "tasks": [{"name": "t", "description": "Press the button", "expected_output": "A report", "agent": "a"}],
        "tools": [{"name": "explode", "description": "Press the button",
                   "parameters": {"type": "object", "properties": {}},
                   "http": {"url": tool_url, "timeout_ms": 120000}, "idempotent": true}]
    });
    let fake_url = fake.base_url();
    let env = [
        ("OPENAI_BASE_URL", fake_url.as_str()),
        ("OPENAI_API_KEY", "sk-quarantine"),
        ("AGENTD_LEASE_S", "2"),
        ("AGENTD_ALLOW_PRIVATE_TOOL_HOSTS", "127.0.0.1/32"),
    ];
    let replica = Agentd::start(&url, &env);
    let app = TestApp::at(&replica.base);
    let run = app.kickoff(&crew, json!({})).await;
    let id = run["id"].as_str().expect("id").to_owned();
    let mut replica = Some(replica);
    for death in 1..=2 {
        tokio::time::timeout(Duration::from_secs(30), calls.recv())
            .await
            .unwrap_or_else(|_| panic!("the tool was not called before death {death}"))
            .expect("tool server");
        if death == 1 {
            // The model's answer is committed while an idempotent call goes on: wait for it, so
            // the next attempt replays it rather than asking the model again.
            let app = TestApp::at(&replica.as_ref().expect("replica").base);
            wait_for_event(&app, &id, "llm.finished").await;
        }
        replica.take().expect("replica").signal("-KILL").await;
        replica = Some(Agentd::start(&url, &env));
    }
    let mut last = replica.expect("replica");
    let app = TestApp::at(&last.base);
    let failed = wait_for_long(&app, &id).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(failed["error"]["kind"], "quarantined", "{failed}");
    let message = failed["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("died 2 times") && message.contains("not handed to another replica"),
        "{failed}"
    );
    assert_eq!(hits.load(Ordering::SeqCst), 2, "the third replica never made the deadly call");
    assert!(calls.try_recv().is_err());
    let events =
        expect_json(app.get(&format!("/v1/runs/{id}/events?limit=1000")).await, StatusCode::OK).await;
    let last_event = events["events"].as_array().and_then(|e| e.last()).cloned().unwrap_or_default();
    assert_eq!(
        (last_event["type"].as_str(), last_event["data"]["error"]["kind"].as_str()),
        (Some("run.failed"), Some("quarantined"))
    );
    // The replica that quarantined it serves on.
    let fresh = app.kickoff(&one_call_crew(), json!({"what": "hello"})).await;
    let done = wait_for(&app, fresh["id"].as_str().expect("id"), &["completed", "failed"]).await;
    assert_eq!(
        (done["status"].as_str(), done["output"]["raw"].as_str()),
        (Some("completed"), Some("after the quarantine, a fresh run"))
    );
    assert!(last.alive());
}

/// Poll a run's events until one of type `kind` is there.
async fn wait_for_event(app: &TestApp, id: &str, kind: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let events =
            expect_json(app.get(&format!("/v1/runs/{id}/events?limit=1000")).await, StatusCode::OK).await;
        if events["events"].as_array().is_some_and(|e| e.iter().any(|e| e["type"] == kind)) {
            return;
        }
        assert!(Instant::now() < deadline, "no {kind} event: {events}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// [`wait_for`] with room for two lease expiries and restarts.
async fn wait_for_long(app: &TestApp, id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        let run = expect_json(app.get(&format!("/v1/runs/{id}")).await, StatusCode::OK).await;
        if ["completed", "failed", "cancelled"].contains(&run["status"].as_str().unwrap_or_default()) {
            return run;
        }
        assert!(Instant::now() < deadline, "run never ended: {run}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A document whose ingesting replicas died twice (leases that expired rather than being given
/// back) is failed as quarantined by the next replica, without being read; one given back by a
/// replica that stopped is not counted.
#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_document_whose_replicas_died_twice_is_quarantined(pool: PgPool) {
    let config = test_config();
    let app = TestApp::spawn_with(pool.clone(), config.clone()).await;
    create_base(&app, "docs").await;
    let store = Store::new(pool.clone());
    let mut ids = Vec::new();
    for text in ["dies twice", "stopped gracefully"] {
        let posted = app
            .post_json("/v1/knowledge/docs/documents", &json!({"text": format!("{GUIDE}\n\n{text}")}))
            .await;
        ids.push(expect_json(posted, StatusCode::ACCEPTED).await["id"].as_str().expect("id").to_owned());
    }
    // Two replicas lease the documents and die (their leases expire); a third gives the second
    // document back as it stops.
    for _ in 0..2 {
        let leased = store.lease_documents(1, Duration::from_millis(100)).await.expect("lease");
        assert_eq!(leased.len(), 1);
        assert_eq!(leased[0].id.to_string(), ids[0]);
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    let leased = store.lease_documents(2, Duration::from_secs(30)).await.expect("lease");
    let deaths: Vec<(String, i32)> = leased.iter().map(|d| (d.id.to_string(), d.deaths)).collect();
    assert_eq!(deaths, [(ids[0].clone(), 2), (ids[1].clone(), 0)]);
    for document in &leased {
        assert!(store
            .release_document(agentd::domain::DocumentId(document.id), document.attempt)
            .await
            .expect("release"));
    }
    let ingester = start_ingester(&pool, &config, Duration::from_secs(5));
    let quarantined = wait_document(&app, "docs", &ids[0]).await;
    assert_eq!(quarantined["status"], "failed", "{quarantined}");
    assert!(
        quarantined["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("quarantined: the replica ingesting it died 2 times")),
        "{quarantined}"
    );
    let fine = wait_document(&app, "docs", &ids[1]).await;
    assert_eq!(fine["status"], "ready", "given back, not a death: {fine}");
    ingester.cancel();
}
