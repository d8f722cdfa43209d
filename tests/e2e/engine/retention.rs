//! Removing runs: `DELETE /v1/runs/{id}` for a finished run (409 for a live one), and the
//! retention pruner removing runs finished longer ago than the retention period, in batches,
//! with everything journaled for them, counted in the metrics.

use std::sync::Arc;

use agentd::metrics::{Gauges, Metrics};
use agentd::retention::RetentionSettings;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::support::expect_problem;

/// Rows each journal table holds for run `id`.
async fn rows_of(pool: &PgPool, id: &str) -> [i64; 5] {
    let id = Uuid::parse_str(id).expect("uuid");
    let mut counts = [0; 5];
    for (slot, table) in counts.iter_mut().zip(["runs", "run_tasks", "events", "messages", "tool_calls"]) {
        let column = if table == "runs" { "id" } else { "run_id" };
        let sql = format!("SELECT count(*) FROM {table} WHERE {column} = $1");
        *slot = sqlx::query_scalar(&sql).bind(id).fetch_one(pool).await.expect("count");
    }
    counts
}

/// A completed run with a tool call: rows in every journal table.
async fn finished_run(h: &Harness) -> String {
    h.fake.push([
        FakeReply::tool_calls(&[("c1", "calculator", json!({"expression": "1+1"}))]),
        FakeReply::text("Two."),
    ]);
    let out = h.run(&crew(json!(["calculator"]), "auto", json!({}))).await;
    assert_eq!(out.run["status"], "completed");
    out.run["id"].as_str().expect("id").to_owned()
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn deleting_a_finished_run_removes_it_with_its_journal_and_key(pool: PgPool) {
    let h = Harness::start(pool.clone(), true).await;
    let id = finished_run(&h).await;
    let before = rows_of(&pool, &id).await;
    assert!(before.iter().all(|&n| n > 0), "every table holds rows of the run: {before:?}");
    let kept = finished_run(&h).await;

    let deleted = h.app.delete(&format!("/v1/runs/{id}")).await;
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    assert_eq!(rows_of(&pool, &id).await, [0; 5]);
    assert!(rows_of(&pool, &kept).await.iter().all(|&n| n > 0), "other runs are untouched");
    let gone = h.app.get(&format!("/v1/runs/{id}")).await;
    expect_problem(gone, StatusCode::NOT_FOUND).await;
    let again = h.app.delete(&format!("/v1/runs/{id}")).await;
    expect_problem(again, StatusCode::NOT_FOUND).await;
    let malformed = h.app.delete("/v1/runs/not-a-uuid").await;
    expect_problem(malformed, StatusCode::BAD_REQUEST).await;

    // A live run is refused, and keeps everything.
    let body = json!({"crew": crew(json!([]), "auto", json!({})), "inputs": {"topic": "tides"}});
    let live =
        h.app.request(reqwest::Method::POST, "/v1/kickoffs").header("idempotency-key", "once").json(&body);
    let live = expect_json(live.send().await.expect("POST"), StatusCode::ACCEPTED).await;
    let live_id = live["id"].as_str().expect("id").to_owned();
    let refused = h.app.delete(&format!("/v1/runs/{live_id}")).await;
    let problem = expect_problem(refused, StatusCode::CONFLICT).await;
    assert_eq!(problem["detail"], "the run has not ended (queued); cancel it first");
    assert_eq!(rows_of(&pool, &live_id).await[0], 1);

    // Once it has ended it can go, and its idempotency key with it: the key starts a new run.
    let cancelled = h.app.post_json(&format!("/v1/runs/{live_id}/cancel"), &json!({})).await;
    assert_eq!(cancelled.status(), StatusCode::ACCEPTED);
    assert_eq!(h.app.delete(&format!("/v1/runs/{live_id}")).await.status(), StatusCode::NO_CONTENT);
    let keys: i64 =
        sqlx::query_scalar("SELECT count(*) FROM idempotency_keys").fetch_one(&pool).await.expect("n");
    assert_eq!(keys, 0);
    let replay =
        h.app.request(reqwest::Method::POST, "/v1/kickoffs").header("idempotency-key", "once").json(&body);
    let replay = expect_json(replay.send().await.expect("POST"), StatusCode::ACCEPTED).await;
    assert_ne!(replay["id"], live["id"]);
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn the_pruner_removes_runs_finished_before_the_retention_period_in_batches(pool: PgPool) {
    let h = Harness::start(pool.clone(), true).await;
    let mut old = Vec::new();
    for _ in 0..5 {
        old.push(finished_run(&h).await);
    }
    let recent = finished_run(&h).await;
    // Created and finished 40 days ago (ids are UUIDv7: an old run has an old id).
    let mut aged_ids = Vec::new();
    for id in &old {
        let uuid = Uuid::parse_str(id).expect("uuid");
        let then = chrono::Utc::now() - chrono::Duration::days(40);
        let ts = uuid::Timestamp::from_unix(uuid::NoContext, then.timestamp() as u64, 0);
        let aged = Uuid::new_v7(ts);
        // A copy of the run under the old id takes its journal; then the original goes.
        let sql = format!(
            "CREATE TEMP TABLE aged AS SELECT * FROM runs WHERE id = '{uuid}';
             UPDATE aged SET id = '{aged}', created_at = '{then}', finished_at = '{then}';
             INSERT INTO runs SELECT * FROM aged;
             DROP TABLE aged;
             UPDATE run_tasks SET run_id = '{aged}' WHERE run_id = '{uuid}';
             UPDATE events SET run_id = '{aged}' WHERE run_id = '{uuid}';
             UPDATE messages SET run_id = '{aged}' WHERE run_id = '{uuid}';
             UPDATE tool_calls SET run_id = '{aged}' WHERE run_id = '{uuid}';
             DELETE FROM runs WHERE id = '{uuid}';",
            then = then.to_rfc3339()
        );
        sqlx::raw_sql(&sql).execute(&pool).await.expect("age the run");
        aged_ids.push(aged.to_string());
    }
    let old = aged_ids;
    // Also old, but still running: never pruned.
    let body = json!({"crew": crew(json!([]), "auto", json!({})), "inputs": {"topic": "tides"}});
    let live = expect_json(h.app.post_json("/v1/kickoffs", &body).await, StatusCode::ACCEPTED).await;
    let live_id = live["id"].as_str().expect("id").to_owned();
    sqlx::query("UPDATE runs SET created_at = now() - interval '40 days' WHERE id = $1")
        .bind(Uuid::parse_str(&live_id).expect("uuid"))
        .execute(&pool)
        .await
        .expect("age");

    let metrics = Arc::new(Metrics::default());
    let shutdown = CancellationToken::new();
    let settings = RetentionSettings {
        batch: 2,
        pause: Duration::from_millis(10),
        every: Duration::from_millis(100),
        ..RetentionSettings::keeping(Duration::from_secs(30 * 86_400))
    };
    // One pass: five runs in batches of at most two.
    let pass = agentd::retention::prune_all(&h.store, &settings, &metrics, &shutdown).await;
    assert_eq!((pass.runs, pass.batches), (5, 3), "{pass:?}");
    // The pruner's loop, with nothing left to remove, ends at shutdown.
    let pruner =
        tokio::spawn(agentd::retention::run(h.store.clone(), settings, metrics.clone(), shutdown.clone()));
    tokio::time::sleep(Duration::from_millis(250)).await;
    shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(30), pruner)
        .await
        .expect("the pruner ends at shutdown")
        .expect("the pruner did not panic");
    for id in &old {
        assert_eq!(rows_of(&pool, id).await, [0; 5], "{id} pruned with its journal");
    }
    assert!(rows_of(&pool, &recent).await.iter().all(|&n| n > 0), "a recent run is kept");
    assert_eq!(rows_of(&pool, &live_id).await[0], 1, "a live run is kept");
    let text = metrics.render(&Gauges::default());
    assert!(text.contains("agentd_pruned_runs_total 5"), "{text}");
    let rows = text
        .lines()
        .find_map(|l| l.strip_prefix("agentd_pruned_rows_total "))
        .and_then(|v| v.parse::<u64>().ok())
        .expect("pruned rows counted");
    assert!(rows > 5 * 5, "{rows}");
}
