//! The event log: appending an event in the transaction of the state it reports (taking the
//! run's next dense `seq`), and reading a run's events in order.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::{Postgres, Transaction};
use uuid::Uuid;

use super::{parse, Store, StoreError, StoreResult};
use crate::domain::TenantId;
use crate::domain::{Event, EventData, RunId, RunStatus};
use crate::engine::journal::NewEvent;

/// Append one event to a run's log inside `tx`; returns its `seq` (see [`append_events_tx`]).
pub(crate) async fn append_event_tx(
    tx: &mut Transaction<'_, Postgres>,
    run_id: RunId,
    task: Option<&str>,
    agent: Option<&str>,
    data: EventData,
) -> StoreResult<i64> {
    let event = NewEvent::new(task, agent, data);
    append_events_tx(tx, run_id, std::slice::from_ref(&event)).await
}

/// Append events to a run's log inside `tx`, in order, with one counter update and one insert
/// whatever their number; returns the last `seq`. The run row's `last_seq` is the counter, so the
/// events of one run are serialised by that row's lock and `seq` stays dense.
pub(crate) async fn append_events_tx(
    tx: &mut Transaction<'_, Postgres>,
    run_id: RunId,
    events: &[NewEvent],
) -> StoreResult<i64> {
    let types: Vec<&str> = events.iter().map(|e| e.event_type.as_str()).collect();
    let tasks: Vec<Option<&str>> = events.iter().map(|e| e.task.as_deref()).collect();
    let agents: Vec<Option<&str>> = events.iter().map(|e| e.agent.as_deref()).collect();
    let data: Vec<Value> = events.iter().map(|e| e.data.clone()).collect();
    let seqs = sqlx::query_scalar!(
        r#"WITH next AS (
               UPDATE runs SET last_seq = last_seq + $2, updated_at = now() WHERE id = $1
               RETURNING last_seq - $2 AS base
           )
           INSERT INTO events (run_id, seq, type, task, agent, data)
           SELECT $1, next.base + e.n, e.type, e.task, e.agent, e.data
             FROM next, UNNEST($3::text[], $4::text[], $5::text[], $6::jsonb[])
                  WITH ORDINALITY AS e(type, task, agent, data, n)
           RETURNING seq"#,
        run_id.0,
        events.len() as i64,
        &types as &[&str],
        &tasks as &[Option<&str>],
        &agents as &[Option<&str>],
        &data,
    )
    .fetch_all(&mut **tx)
    .await?;
    match seqs.iter().max() {
        Some(last) if seqs.len() == events.len() => Ok(*last),
        _ if events.is_empty() => Ok(0),
        _ => Err(StoreError::Corrupt(format!("events for missing run {run_id}"))),
    }
}

struct EventRow {
    seq: i64,
    run_id: Uuid,
    event_type: String,
    at: DateTime<Utc>,
    task: Option<String>,
    agent: Option<String>,
    data: Value,
}

impl EventRow {
    fn into_event(self) -> StoreResult<Event> {
        Ok(Event {
            seq: self.seq,
            run_id: RunId(self.run_id),
            event_type: parse(&self.event_type)?,
            at: self.at,
            task: self.task,
            agent: self.agent,
            data: self.data,
        })
    }
}

/// An event with its global id and its run's crew and tenant.
struct LoggedEventRow {
    id: i64,
    crew_name: String,
    tenant: String,
    seq: i64,
    run_id: Uuid,
    event_type: String,
    at: DateTime<Utc>,
    task: Option<String>,
    agent: Option<String>,
    data: Value,
}

impl LoggedEventRow {
    fn into_logged(self) -> StoreResult<LoggedEvent> {
        let Self { id, crew_name, tenant, seq, run_id, event_type, at, task, agent, data } = self;
        let event = EventRow { seq, run_id, event_type, at, task, agent, data }.into_event()?;
        Ok(LoggedEvent { id, crew: crew_name, tenant: TenantId::from(tenant), event })
    }
}

/// An event with its global id, and its run's crew and tenant (what the firehose filters by).
#[derive(Debug, Clone)]
pub struct LoggedEvent {
    pub id: i64,
    pub crew: String,
    pub tenant: TenantId,
    pub event: Event,
}

impl Store {
    /// Append one event on its own (for steps that change no other state, such as a thought).
    #[tracing::instrument(skip_all, fields(run_id = %run_id, event = data.event_type().as_str()), err)]
    pub async fn append_event(
        &self,
        run_id: RunId,
        task: Option<&str>,
        agent: Option<&str>,
        data: EventData,
    ) -> StoreResult<i64> {
        let mut tx = self.pool.begin().await?;
        let seq = append_event_tx(&mut tx, run_id, task, agent, data).await?;
        tx.commit().await?;
        Ok(seq)
    }

    /// A run's events with `seq > after`, in order, at most `limit`.
    #[tracing::instrument(skip_all, fields(run_id = %run_id), err)]
    pub async fn list_events(&self, run_id: RunId, after: i64, limit: i64) -> StoreResult<Vec<Event>> {
        let rows = sqlx::query_as!(
            EventRow,
            r#"SELECT seq, run_id, type AS event_type, at, task, agent, data
               FROM events WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3"#,
            run_id.0,
            after,
            limit
        )
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter().map(EventRow::into_event).collect()
    }

    /// The highest global event id committed (0 with no events): where a firehose that starts at
    /// the end of the log starts.
    #[tracing::instrument(skip_all, err)]
    pub async fn last_event_id(&self) -> StoreResult<i64> {
        let id = sqlx::query_scalar!(r#"SELECT coalesce(max(id), 0) AS "id!" FROM events"#)
            .fetch_one(&self.pool)
            .await?;
        Ok(id)
    }

    /// Every run's events with a global id above `after`, in id order, at most `limit`, optionally
    /// only those of `crew`'s runs and of `tenant`'s; each with its global id.
    #[tracing::instrument(skip_all, err)]
    pub async fn list_all_events(
        &self,
        after: i64,
        limit: i64,
        crew: Option<&str>,
        tenant: Option<&TenantId>,
    ) -> StoreResult<Vec<(i64, Event)>> {
        let rows = sqlx::query_as!(
            LoggedEventRow,
            r#"SELECT e.id, r.crew_name, r.tenant, e.seq, e.run_id, e.type AS event_type, e.at, e.task, e.agent, e.data
               FROM events e JOIN runs r ON r.id = e.run_id
               WHERE e.id > $1 AND ($3::text IS NULL OR r.crew_name = $3) AND ($4::text IS NULL OR r.tenant = $4)
               ORDER BY e.id LIMIT $2"#,
            after,
            limit,
            crew,
            tenant.map(TenantId::as_str)
        )
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter().map(|row| row.into_logged().map(|logged| (logged.id, logged.event))).collect()
    }

    /// The events with these global ids, in id order, each with its id and its run's crew and
    /// tenant (for the listener, which is told ids at commit).
    #[tracing::instrument(skip_all, fields(events = ids.len()), err)]
    pub async fn events_by_id(&self, ids: &[i64]) -> StoreResult<Vec<LoggedEvent>> {
        let rows = sqlx::query_as!(
            LoggedEventRow,
            r#"SELECT e.id, r.crew_name, r.tenant, e.seq, e.run_id, e.type AS event_type, e.at, e.task, e.agent, e.data
               FROM events e JOIN runs r ON r.id = e.run_id
               WHERE e.id = ANY($1)
               ORDER BY e.id"#,
            ids,
        )
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter().map(LoggedEventRow::into_logged).collect()
    }

    /// The status of a run, if it exists.
    #[tracing::instrument(skip_all, fields(run_id = %run_id), err)]
    pub async fn run_status(&self, run_id: RunId) -> StoreResult<Option<RunStatus>> {
        let status = sqlx::query_scalar!("SELECT status FROM runs WHERE id = $1", run_id.0)
            .fetch_optional(&self.pool)
            .await?;
        status.as_deref().map(parse).transpose()
    }

    /// A run's status and the `seq` of its newest event.
    #[tracing::instrument(skip_all, fields(run_id = %run_id), err)]
    pub async fn run_progress(&self, run_id: RunId) -> StoreResult<Option<(RunStatus, i64)>> {
        let row = sqlx::query!("SELECT status, last_seq FROM runs WHERE id = $1", run_id.0)
            .fetch_optional(&self.pool)
            .await?;
        row.map(|r| Ok((parse(&r.status)?, r.last_seq))).transpose()
    }

    /// Does a run with this id exist?
    #[tracing::instrument(skip_all, fields(run_id = %run_id), err)]
    pub async fn run_exists(&self, run_id: RunId) -> StoreResult<bool> {
        let found =
            sqlx::query_scalar!(r#"SELECT EXISTS (SELECT 1 FROM runs WHERE id = $1) AS "found!""#, run_id.0)
                .fetch_one(&self.pool)
                .await?;
        Ok(found)
    }
}
