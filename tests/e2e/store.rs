//! The store's own functions, below the HTTP layer.

use std::collections::BTreeSet;

use agentd::domain::crew::UpsertOutcome;
use agentd::domain::event::RunStarted;
use agentd::domain::{CrewSpec, EventData, EventType, RunId};
use agentd::store::{Created, IdempotencyKey, Store, StoreError};
use sqlx::PgPool;

use crate::support::{new_run, sample_crew, thought};

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn create_and_get_a_run(pool: PgPool) {
    let store = Store::new(pool);
    let run = new_run();
    let created = store.create_run(&run).await.expect("create");
    assert_eq!(created.id, run.id);
    assert_eq!(created.tasks.len(), 2);
    assert_eq!(store.get_run(run.id).await.expect("get"), Some(created));
    assert_eq!(store.get_run(RunId::new()).await.expect("get"), None);
    let events = store.list_events(run.id, 0, 10).await.expect("events");
    assert_eq!(events.iter().map(|e| (e.seq, e.event_type)).collect::<Vec<_>>(), [(1, EventType::RunQueued)]);
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn concurrent_appends_keep_seq_dense(pool: PgPool) {
    let store = Store::new(pool);
    let run = new_run();
    store.create_run(&run).await.expect("create");
    let appends = (0..20).map(|i| {
        let store = store.clone();
        tokio::spawn(async move {
            store.append_event(run.id, None, None, thought(i.to_string())).await.expect("append")
        })
    });
    let mut seqs = BTreeSet::new();
    for append in appends {
        seqs.insert(append.await.expect("join"));
    }
    assert_eq!(seqs, (2..=21).collect::<BTreeSet<i64>>());
    let stored: Vec<i64> =
        store.list_events(run.id, 0, 100).await.expect("events").iter().map(|e| e.seq).collect();
    assert_eq!(stored, (1..=21).collect::<Vec<i64>>());
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn an_event_for_a_missing_run_is_an_error(pool: PgPool) {
    let store = Store::new(pool);
    let started = RunStarted { attempt: 1, worker: "w".into(), trace_id: None };
    let result = store.append_event(RunId::new(), None, None, EventData::RunStarted(started)).await;
    assert!(matches!(result, Err(StoreError::Corrupt(_))), "{result:?}");
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn idempotency_keys_replay_or_conflict(pool: PgPool) {
    let store = Store::new(pool);
    let key = IdempotencyKey {
        tenant: "default".into(),
        key: "k".into(),
        scope: "kickoff",
        fingerprint: vec![1, 2, 3],
    };
    assert!(store.find_idempotent_runs(&key).await.expect("find").is_none());
    let first = new_run();
    assert!(matches!(
        store.create_runs(std::slice::from_ref(&first), Some(&key)).await.expect("create"),
        Created::New(_)
    ));
    let second = new_run();
    match store.create_runs(std::slice::from_ref(&second), Some(&key)).await.expect("create") {
        Created::Replayed(runs) => assert_eq!(runs.iter().map(|r| r.id).collect::<Vec<_>>(), [first.id]),
        other => panic!("expected a replay, got {other:?}"),
    }
    assert_eq!(store.get_run(second.id).await.expect("get"), None, "the losing run was not stored");
    let other = IdempotencyKey { fingerprint: vec![9], ..key.clone() };
    assert!(matches!(
        store.create_runs(std::slice::from_ref(&second), Some(&other)).await.expect("create"),
        Created::KeyConflict
    ));
    let elsewhere = IdempotencyKey { scope: "batch", ..key };
    assert!(matches!(
        store.find_idempotent_runs(&elsewhere).await.expect("find"),
        Some(Created::KeyConflict)
    ));
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn list_runs_knows_the_last_page(pool: PgPool) {
    let store = Store::new(pool);
    for _ in 0..3 {
        store.create_run(&new_run()).await.expect("create");
    }
    let page = store.list_runs(None, None, None, 3).await.expect("list");
    assert_eq!((page.runs.len(), page.next_before), (3, None));
    let page = store.list_runs(None, None, None, 2).await.expect("list");
    assert_eq!(page.next_before, Some(page.runs[1].id));
    let rest = store.list_runs(None, None, page.next_before, 2).await.expect("list");
    assert_eq!((rest.runs.len(), rest.next_before), (1, None));
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn crews_upsert_reports_created_or_replaced(pool: PgPool) {
    let store = Store::new(pool);
    let mut spec = CrewSpec::from_json(sample_crew()).expect("spec");
    let (_, outcome) =
        store.upsert_crew(&agentd::domain::DEFAULT_TENANT_ID, &spec, &audit()).await.expect("upsert");
    assert_eq!(outcome, UpsertOutcome::Created);
    spec.max_rpm = Some(10);
    let (record, outcome) =
        store.upsert_crew(&agentd::domain::DEFAULT_TENANT_ID, &spec, &audit()).await.expect("upsert");
    assert_eq!((outcome, record.spec.max_rpm), (UpsertOutcome::Replaced, Some(10)));
    assert_eq!(store.list_crews(&agentd::domain::DEFAULT_TENANT_ID, false).await.expect("list").len(), 1);
    assert!(store
        .delete_crew(&agentd::domain::DEFAULT_TENANT_ID, &spec.name, &audit())
        .await
        .expect("delete"));
    assert!(!store
        .delete_crew(&agentd::domain::DEFAULT_TENANT_ID, &spec.name, &audit())
        .await
        .expect("delete"));
}

#[sqlx::test(migrations = false)]
async fn concurrent_migrations_are_safe(pool: PgPool) {
    let store = Store::new(pool);
    assert!(!store.check_ready().await.expect("ready check"));
    let migrations = (0..4).map(|_| {
        let store = store.clone();
        tokio::spawn(async move { store.migrate().await })
    });
    for migration in migrations {
        migration.await.expect("join").expect("migrate");
    }
    assert!(store.check_ready().await.expect("ready check"));
}

#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn listening_survives_a_lost_connection_and_says_so(pool: PgPool) {
    use agentd::store::{Listened, Notification, RUNS_CHANNEL};
    use futures_util::StreamExt;
    use std::time::Duration;

    let store = Store::new(pool.clone());
    let listened = store.listen(&[RUNS_CHANNEL]);
    tokio::pin!(listened);
    assert_eq!(
        tokio::time::timeout(Duration::from_secs(10), listened.next()).await.expect("connected"),
        Some(Listened::Connected { again: false })
    );
    let notify = |payload: &'static str| {
        let pool = pool.clone();
        async move {
            sqlx::query("SELECT pg_notify($1, $2)")
                .bind(RUNS_CHANNEL)
                .bind(payload)
                .execute(&pool)
                .await
                .expect("notify")
        }
    };
    notify("first").await;
    let first = Notification { channel: RUNS_CHANNEL.into(), payload: "first".into() };
    assert_eq!(
        tokio::time::timeout(Duration::from_secs(10), listened.next()).await.expect("notified"),
        Some(Listened::Notifications(vec![first]))
    );

    // Kill the listening connection: the stream says notifications may have been missed, then
    // delivers again.
    let killed: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE datname = current_database() AND query LIKE 'LISTEN%' AND pid <> pg_backend_pid()",
    )
    .fetch_all(&pool)
    .await
    .expect("terminate");
    assert_eq!(killed, [true], "one listening connection");
    let mut said_so = false;
    let mut delivered = false;
    for _ in 0..50 {
        notify("again").await;
        match tokio::time::timeout(Duration::from_secs(1), listened.next()).await {
            Ok(Some(Listened::Lost | Listened::Connected { again: true })) => said_so = true,
            Ok(Some(Listened::Notifications(batch))) => {
                assert!(said_so, "a notification after the loss came before the stream said so");
                assert!(batch.iter().all(|n| n.channel == RUNS_CHANNEL && n.payload == "again"), "{batch:?}");
                delivered = true;
                break;
            }
            Ok(other) => panic!("unexpected {other:?}"),
            Err(_) => {}
        }
    }
    assert!(said_so && delivered, "said so: {said_so}, delivered: {delivered}");
}

/// The outbox trigger: a delivery per committed event and matching endpoint (exact types,
/// `prefix.*`, `*`, the crew filter), none for a rolled-back one, counted in its queue.
#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn the_outbox_has_a_delivery_exactly_for_each_committed_matching_event(pool: PgPool) {
    let store = Store::new(pool.clone());
    let endpoint = |events: &[&str], crew: Option<&str>| agentd::store::NewEndpoint {
        id: uuid::Uuid::now_v7(),
        url: "http://127.0.0.1:9/hook".into(),
        events: events.iter().map(|e| e.to_string()).collect(),
        crew: crew.map(str::to_owned),
        description: String::new(),
        salt: Some(vec![1; 32]),
        run_id: None,
    };
    let everything = store
        .create_webhook(&agentd::domain::DEFAULT_TENANT_ID, &endpoint(&["*"], None), &audit())
        .await
        .expect("create");
    let threads = store
        .create_webhook(
            &agentd::domain::DEFAULT_TENANT_ID,
            &endpoint(&["agent.*", "run.queued"], None),
            &audit(),
        )
        .await
        .expect("create");
    let elsewhere = store
        .create_webhook(&agentd::domain::DEFAULT_TENANT_ID, &endpoint(&["*"], Some("another-crew")), &audit())
        .await
        .expect("create");
    let run = new_run();
    store.create_run(&run).await.expect("create run");
    store.append_event(run.id, None, None, thought("kept")).await.expect("append");
    let mut tx = pool.begin().await.expect("begin");
    sqlx::query("INSERT INTO events (run_id, seq, type, data) VALUES ($1, 99, 'agent.thought', '{}')")
        .bind(run.id.0)
        .execute(&mut *tx)
        .await
        .expect("insert");
    tx.rollback().await.expect("rollback");
    let count = |endpoint: uuid::Uuid| {
        let pool = pool.clone();
        async move {
            let seqs: Vec<i64> =
                sqlx::query_scalar("SELECT seq FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY seq")
                    .bind(endpoint)
                    .fetch_all(&pool)
                    .await
                    .expect("deliveries");
            let pending: Option<i32> =
                sqlx::query_scalar("SELECT pending FROM webhook_queues WHERE endpoint_id = $1")
                    .bind(endpoint)
                    .fetch_optional(&pool)
                    .await
                    .expect("queue");
            (seqs, pending)
        }
    };
    assert_eq!(count(everything.id.0).await, (vec![1, 2], Some(2)), "run.queued and the thought");
    assert_eq!(count(threads.id.0).await, (vec![1, 2], Some(2)));
    assert_eq!(count(elsewhere.id.0).await, (vec![], None), "another crew's runs only");
    store
        .update_webhook(
            threads.id,
            &agentd::store::EndpointPatch { events: Some(vec!["tool.*".into()]), ..Default::default() },
            &audit(),
        )
        .await
        .expect("patch");
    store.append_event(run.id, None, None, thought("again")).await.expect("append");
    assert_eq!(count(threads.id.0).await, (vec![1, 2], Some(2)), "no longer matching");
    assert_eq!(count(everything.id.0).await, (vec![1, 2, 3], Some(3)));
}

/// What a change made straight through the store is recorded as.
fn audit() -> agentd::store::Audit {
    agentd::store::Audit::new(None, &agentd::domain::DEFAULT_TENANT_ID, "test.change", "/test")
}

/// The compatibility window (docs/operations.md, "Rolling upgrades") is declared migration by
/// migration: each from `schema_window`'s own on adds its row, naming a schema that existed
/// before it (a replica's schema is the version of one of its migrations).
#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn every_migration_declares_its_compatibility_window(pool: PgPool) {
    let first = 20_261_206_000_028_i64;
    let undeclared: Vec<i64> = sqlx::query_scalar(
        "SELECT m.version FROM _sqlx_migrations AS m LEFT JOIN schema_window AS w USING (version) \
         WHERE m.version >= $1 AND w.version IS NULL ORDER BY 1",
    )
    .bind(first)
    .fetch_all(&pool)
    .await
    .expect("migrations");
    assert_eq!(undeclared, Vec::<i64>::new(), "add each migration's row to schema_window (CONTRIBUTING.md)");
    let wrong: Vec<(i64, i64)> = sqlx::query_as(
        "SELECT w.version, w.oldest_schema FROM schema_window AS w \
         WHERE w.oldest_schema > w.version \
            OR NOT EXISTS (SELECT 1 FROM _sqlx_migrations AS m WHERE m.version = w.oldest_schema)",
    )
    .fetch_all(&pool)
    .await
    .expect("windows");
    assert_eq!(wrong, Vec::new(), "oldest_schema must name an earlier migration");
    let releases: Vec<String> = sqlx::query_scalar("SELECT DISTINCT release FROM schema_window")
        .fetch_all(&pool)
        .await
        .expect("releases");
    assert!(releases.iter().all(|r| r.split('.').count() == 3), "{releases:?}");
}

/// `src/store/sql/` holds the current definition of every function of the database (and names
/// every trigger): replacing each function with its file's definition, in a migrated database,
/// changes nothing; every function has its file and every file its function.
#[sqlx::test(migrator = "agentd::store::MIGRATOR")]
async fn the_sql_definitions_in_src_are_the_databases(pool: PgPool) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/store/sql");
    let mut files: Vec<(String, String)> = std::fs::read_dir(&dir)
        .expect("src/store/sql")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "sql"))
        .map(|path| {
            let name = path.file_stem().expect("stem").to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&path).expect("read"))
        })
        .collect();
    files.sort();
    let definitions = "SELECT p.proname::text, pg_get_functiondef(p.oid) FROM pg_proc p
                         JOIN pg_namespace n ON n.oid = p.pronamespace
                        WHERE n.nspname = current_schema() ORDER BY 1";
    let migrated: Vec<(String, String)> =
        sqlx::query_as(definitions).fetch_all(&pool).await.expect("functions");
    let names = |list: &[(String, String)]| list.iter().map(|(name, _)| name.clone()).collect::<Vec<_>>();
    assert_eq!(names(&files), names(&migrated), "one file per function of the database");

    let mut tx = pool.begin().await.expect("begin");
    for (name, text) in &files {
        sqlx::raw_sql(text).execute(&mut *tx).await.unwrap_or_else(|e| panic!("{name}.sql: {e}"));
    }
    let replaced: Vec<(String, String)> =
        sqlx::query_as(definitions).fetch_all(&mut *tx).await.expect("functions");
    for ((name, migrated), (_, replaced)) in migrated.iter().zip(&replaced) {
        assert_eq!(replaced, migrated, "src/store/sql/{name}.sql is not the definition the migrations leave");
    }
    let triggers: Vec<(String, String)> = sqlx::query_as(
        "SELECT tgfoid::regproc::text, pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal ORDER BY tgname",
    )
    .fetch_all(&mut *tx)
    .await
    .expect("triggers");
    assert!(!triggers.is_empty());
    for (function, trigger) in &triggers {
        let file = files.iter().find(|(name, _)| name == function).map(|(_, text)| text.as_str());
        assert!(
            file.is_some_and(|text| text.contains(&format!("-- trigger: {trigger}\n"))),
            "src/store/sql/{function}.sql does not name its trigger: {trigger}"
        );
    }
    tx.rollback().await.expect("rollback");
}
