//! The queue claim: oldest queued run first, one claimer per run, attempts counted, `run.started`
//! logged with the claim.

use std::collections::BTreeSet;
use std::time::Duration;

use agentd::domain::{EventType, RunId, RunStatus};
use agentd::store::Store;
use serde_json::json;
use sqlx::PgPool;

use crate::support::new_run;

const LEASE: Duration = Duration::from_secs(30);

/// Store `n` queued runs; their ids in creation order.
pub async fn queued_runs(store: &Store, n: usize) -> Vec<RunId> {
    let mut ids = Vec::with_capacity(n);
    for _ in 0..n {
        let run = new_run();
        store.create_run(&run).await.expect("create");
        ids.push(run.id);
    }
    ids
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn claims_take_the_oldest_queued_run_first(pool: PgPool) {
    let store = Store::new(pool.clone());
    let ids = queued_runs(&store, 3).await;
    // The last run was created first: age decides, not the id.
    sqlx::query("UPDATE runs SET created_at = created_at - interval '1 hour' WHERE id = $1")
        .bind(ids[2].0)
        .execute(&pool)
        .await
        .expect("backdate");
    let mut claimed = Vec::new();
    while let Some(run) = store.claim_next_run("worker-1", LEASE).await.expect("claim") {
        assert_eq!(run.attempt, 1);
        claimed.push(run.id);
    }
    assert_eq!(claimed, [ids[2], ids[0], ids[1]]);
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_claim_leases_the_run_and_logs_run_started(pool: PgPool) {
    let store = Store::new(pool.clone());
    let run = new_run();
    store.create_run(&run).await.expect("create");
    let claimed = store.claim_next_run("worker-1", LEASE).await.expect("claim").expect("a run");
    assert_eq!((claimed.id, claimed.attempt), (run.id, 1));
    assert_eq!((&*claimed.crew, &claimed.inputs), (&run.crew, &run.inputs));

    let stored = store.get_run(run.id).await.expect("get").expect("run");
    assert_eq!((stored.status, stored.attempt), (RunStatus::Running, 1));
    assert!(stored.started_at.is_some());
    let (owner, lease_s): (Option<String>, f64) = sqlx::query_as(
        "SELECT lease_owner, extract(epoch FROM lease_expires_at - now())::float8 FROM runs WHERE id = $1",
    )
    .bind(run.id.0)
    .fetch_one(&pool)
    .await
    .expect("lease");
    assert_eq!(owner.as_deref(), Some("worker-1"));
    assert!((20.0..=30.0).contains(&lease_s), "lease of {lease_s}s");

    let events = store.list_events(run.id, 0, 10).await.expect("events");
    let started: Vec<_> = events.iter().map(|e| (e.seq, e.event_type, e.data.clone())).collect();
    assert_eq!(
        started,
        [
            (1, EventType::RunQueued, json!({})),
            (2, EventType::RunStarted, json!({"attempt": 1, "worker": "worker-1"}))
        ]
    );
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn claim_run_takes_only_a_queued_run(pool: PgPool) {
    let store = Store::new(pool.clone());
    let run = new_run();
    store.create_run(&run).await.expect("create");
    assert!(store.claim_run(RunId::new(), "w", LEASE).await.expect("claim").is_none());
    let first = store.claim_run(run.id, "w1", LEASE).await.expect("claim").expect("claimed");
    assert_eq!(first.attempt, 1);
    assert!(store.claim_run(run.id, "w2", LEASE).await.expect("claim").is_none(), "already running");
    assert!(store.claim_next_run("w2", LEASE).await.expect("claim").is_none(), "nothing queued");
    let started_at = store.get_run(run.id).await.expect("get").expect("run").started_at;

    // Put back in the queue (as recovery does after a lost lease): the next claim is attempt 2.
    sqlx::query("UPDATE runs SET status = 'queued' WHERE id = $1")
        .bind(run.id.0)
        .execute(&pool)
        .await
        .expect("requeue");
    let second = store.claim_run(run.id, "w2", LEASE).await.expect("claim").expect("claimed");
    assert_eq!(second.attempt, 2);
    let stored = store.get_run(run.id).await.expect("get").expect("run");
    assert_eq!((stored.attempt, stored.started_at), (2, started_at), "started_at is the first start");
    let events = store.list_events(run.id, 2, 10).await.expect("events");
    assert_eq!(events.len(), 1);
    assert_eq!(
        (events[0].event_type, &events[0].data),
        (EventType::RunStarted, &json!({"attempt": 2, "worker": "w2"}))
    );
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn concurrent_claims_take_each_run_exactly_once(pool: PgPool) {
    let store = Store::new(pool);
    let ids = queued_runs(&store, 10).await;
    let claimers = (0..5).map(|i| {
        let store = store.clone();
        tokio::spawn(async move {
            let mut claimed = Vec::new();
            while let Some(run) = store.claim_next_run(&format!("worker-{i}"), LEASE).await.expect("claim") {
                claimed.push((run.id, run.attempt));
            }
            claimed
        })
    });
    let mut all = Vec::new();
    for claimer in claimers {
        all.extend(claimer.await.expect("join"));
    }
    assert_eq!(all.len(), 10, "{all:?}");
    assert!(all.iter().all(|(_, attempt)| *attempt == 1));
    let claimed: BTreeSet<RunId> = all.into_iter().map(|(id, _)| id).collect();
    assert_eq!(claimed, ids.into_iter().collect::<BTreeSet<_>>());
    let queued = store.list_runs(None, Some(RunStatus::Queued), None, 100).await.expect("list");
    assert!(queued.runs.is_empty());
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn a_batch_claim_takes_the_oldest_runs_each_with_its_run_started(pool: PgPool) {
    let store = Store::new(pool);
    let mut ids = Vec::new();
    for _ in 0..5 {
        let run = crate::support::new_run();
        store.create_run(&run).await.expect("create");
        ids.push(run.id);
    }
    let claimed = store.claim_next_runs("batch", Duration::from_secs(30), 3).await.expect("claim");
    let claimed: Vec<_> = claimed.into_iter().map(|r| r.expect("readable")).collect();
    assert_eq!(claimed.iter().map(|r| r.id).collect::<Vec<_>>(), ids[..3]);
    for run in &claimed {
        assert_eq!(run.attempt, 1);
        let events = store.list_events(run.id, 0, 10).await.expect("events");
        let started: Vec<_> = events.iter().map(|e| (e.seq, e.event_type, e.data.clone())).collect();
        assert_eq!(started[1], (2, EventType::RunStarted, json!({"attempt": 1, "worker": "batch"})));
    }
    let rest = store.claim_next_runs("batch", Duration::from_secs(30), 10).await.expect("claim");
    assert_eq!(rest.len(), 2);
    assert!(store.claim_next_runs("batch", Duration::from_secs(30), 10).await.expect("claim").is_empty());
}
