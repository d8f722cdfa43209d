//! Schedules: a tenant's schedules, their handled ticks, and handling a due schedule's ticks in
//! one transaction under its row lock (each tick's run, its row keyed by (schedule, tick), and the
//! schedule's advance commit together, or none do), so a tick fires once across all replicas.

use chrono::{DateTime, SubsecRound, Utc};
use serde_json::{Map, Value};
use uuid::Uuid;

use super::runs::{insert_runs, QueuedRun};
use super::tenants::hold_queue;
use super::threads::{insert_in_thread, InThread};
use super::{decode, parse, Audit, Store, StoreResult};
use crate::domain::kickoff::NewRun;
use crate::domain::schedule::SchedulePage;
use crate::domain::schedule::{CatchUp, Overlap, Schedule, ScheduleTick, TickOutcome};
use crate::domain::RunStatus;
use crate::domain::ScheduleId;
use crate::domain::TenantId;

/// A schedule's settings as stored (the API's fields less its ids and times).
#[derive(Debug, Clone)]
pub struct ScheduleFields {
    pub name: Option<String>,
    pub cron: String,
    pub timezone: String,
    pub kickoff: Map<String, Value>,
    pub overlap: Overlap,
    pub catch_up: CatchUp,
    pub enabled: bool,
    pub next_run_at: Option<DateTime<Utc>>,
}

/// A due schedule, as the scheduler reads it.
#[derive(Debug, Clone)]
pub struct DueSchedule {
    pub id: Uuid,
    pub tenant: TenantId,
    pub cron: String,
    pub timezone: String,
    pub kickoff: Map<String, Value>,
    pub overlap: Overlap,
    pub catch_up: CatchUp,
    pub next_run_at: DateTime<Utc>,
}

/// What to do with one tick.
#[derive(Debug)]
pub enum TickAction {
    /// Kick off this run (skipped under `overlap: skip` while a run of the schedule has not
    /// ended).
    Fire(Box<NewRun>),
    Missed,
    /// The kickoff could not be prepared: why.
    Failed(String),
}

/// The statuses of a run that has not ended (a `waiting` one excepted: it is behind them).
const RUNNING: [&str; 4] = ["queued", "running", "awaiting_input", "cancelling"];

struct ScheduleRow {
    id: Uuid,
    name: Option<String>,
    cron: String,
    timezone: String,
    kickoff: Value,
    overlap: String,
    catch_up: String,
    enabled: bool,
    next_run_at: Option<DateTime<Utc>>,
    last_tick_at: Option<DateTime<Utc>>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

impl ScheduleRow {
    fn into_schedule(self) -> StoreResult<Schedule> {
        let strum = |s: &str| super::StoreError::Corrupt(format!("schedules: '{s}'"));
        Ok(Schedule {
            id: self.id,
            name: self.name,
            cron: self.cron,
            timezone: self.timezone,
            kickoff: decode(self.kickoff, "schedules.kickoff")?,
            overlap: self.overlap.parse().map_err(|_| strum(&self.overlap))?,
            catch_up: self.catch_up.parse().map_err(|_| strum(&self.catch_up))?,
            enabled: self.enabled,
            next_run_at: self.next_run_at,
            last_tick_at: self.last_tick_at,
            created_at: self.created_at,
            updated_at: self.updated_at,
        })
    }
}

impl Store {
    /// A new schedule of `tenant`.
    #[tracing::instrument(skip_all, err)]
    pub async fn create_schedule(
        &self,
        tenant: &TenantId,
        fields: &ScheduleFields,
        audit: &Audit,
    ) -> StoreResult<Schedule> {
        let id = Uuid::now_v7();
        let mut tx = self.pool.begin().await?;
        let overlap: &str = fields.overlap.into();
        let catch_up: &str = fields.catch_up.into();
        let row = sqlx::query_as!(
            ScheduleRow,
            r#"INSERT INTO schedules (id, tenant, name, cron, timezone, kickoff, overlap, catch_up, enabled, next_run_at)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
               RETURNING id, name, cron, timezone, kickoff, overlap, catch_up, enabled, next_run_at, last_tick_at,
                         created_at, updated_at"#,
            id,
            tenant.as_str(),
            fields.name,
            fields.cron,
            fields.timezone,
            Value::Object(fields.kickoff.clone()),
            overlap,
            catch_up,
            fields.enabled,
            fields.next_run_at
        )
        .fetch_one(&mut *tx)
        .await?;
        audit.record_in(&mut tx, tenant, Some(&format!("/v1/schedules/{id}"))).await?;
        tx.commit().await?;
        row.into_schedule()
    }

    /// One of the tenant's schedules.
    #[tracing::instrument(skip_all, fields(schedule_id = %id), err)]
    pub async fn get_schedule(&self, tenant: &TenantId, id: ScheduleId) -> StoreResult<Option<Schedule>> {
        let row = sqlx::query_as!(
            ScheduleRow,
            r#"SELECT id, name, cron, timezone, kickoff, overlap, catch_up, enabled, next_run_at, last_tick_at,
                      created_at, updated_at
                 FROM schedules WHERE id = $1 AND tenant = $2"#,
            id.0,
            tenant.as_str()
        )
        .fetch_optional(&self.pool)
        .await?;
        row.map(ScheduleRow::into_schedule).transpose()
    }

    /// The tenant's schedules, newest first, strictly older than `before`.
    #[tracing::instrument(skip_all, err)]
    pub async fn list_schedules(
        &self,
        tenant: &TenantId,
        before: Option<ScheduleId>,
        limit: i64,
    ) -> StoreResult<SchedulePage> {
        let rows = sqlx::query_as!(
            ScheduleRow,
            r#"SELECT id, name, cron, timezone, kickoff, overlap, catch_up, enabled, next_run_at, last_tick_at,
                      created_at, updated_at
                 FROM schedules WHERE tenant = $1 AND id < $2 ORDER BY id DESC LIMIT $3"#,
            tenant.as_str(),
            before.map_or(Uuid::max(), ScheduleId::uuid),
            limit + 1
        )
        .fetch_all(&self.pool)
        .await?;
        let has_more = rows.len() as i64 > limit;
        let mut schedules =
            rows.into_iter().map(ScheduleRow::into_schedule).collect::<StoreResult<Vec<_>>>()?;
        schedules.truncate(limit.max(0) as usize);
        let next_before = has_more.then(|| schedules.last().map(|s| s.id)).flatten();
        Ok(SchedulePage { schedules, next_before })
    }

    /// Replace a schedule's settings (its row locked: a pass handling it finishes first).
    #[tracing::instrument(skip_all, fields(schedule_id = %id), err)]
    pub async fn update_schedule(
        &self,
        tenant: &TenantId,
        id: ScheduleId,
        fields: &ScheduleFields,
        audit: &Audit,
    ) -> StoreResult<Option<Schedule>> {
        let mut tx = self.pool.begin().await?;
        let overlap: &str = fields.overlap.into();
        let catch_up: &str = fields.catch_up.into();
        let row = sqlx::query_as!(
            ScheduleRow,
            r#"UPDATE schedules SET name = $3, cron = $4, timezone = $5, kickoff = $6, overlap = $7, catch_up = $8,
                                    enabled = $9, next_run_at = $10, updated_at = now()
                WHERE id = $1 AND tenant = $2
            RETURNING id, name, cron, timezone, kickoff, overlap, catch_up, enabled, next_run_at, last_tick_at,
                      created_at, updated_at"#,
            id.0,
            tenant.as_str(),
            fields.name,
            fields.cron,
            fields.timezone,
            Value::Object(fields.kickoff.clone()),
            overlap,
            catch_up,
            fields.enabled,
            fields.next_run_at
        )
        .fetch_optional(&mut *tx)
        .await?;
        audit.settle(tx, row.is_some().then_some(tenant)).await?;
        row.map(ScheduleRow::into_schedule).transpose()
    }

    /// Delete one of the tenant's schedules with its ticks (its runs stay); whether it existed.
    #[tracing::instrument(skip_all, fields(schedule_id = %id), err)]
    pub async fn delete_schedule(
        &self,
        tenant: &TenantId,
        id: ScheduleId,
        audit: &Audit,
    ) -> StoreResult<bool> {
        let delete =
            sqlx::query!("DELETE FROM schedules WHERE id = $1 AND tenant = $2", id.0, tenant.as_str());
        self.delete_audited(delete, tenant, audit).await
    }

    /// A schedule's handled ticks, newest first, strictly older than `before`, with their runs'
    /// statuses.
    #[tracing::instrument(skip_all, fields(schedule_id = %id), err)]
    pub async fn schedule_ticks(
        &self,
        id: ScheduleId,
        before: Option<DateTime<Utc>>,
        limit: i64,
    ) -> StoreResult<Vec<ScheduleTick>> {
        let rows = sqlx::query!(
            r#"SELECT t.tick, t.outcome, t.run_id, t.error, t.handled_at, r.status AS "status?"
                 FROM schedule_ticks AS t LEFT JOIN runs AS r ON r.id = t.run_id
                WHERE t.schedule_id = $1 AND ($2::timestamptz IS NULL OR t.tick < $2)
                ORDER BY t.tick DESC LIMIT $3"#,
            id.0,
            before,
            limit
        )
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter()
            .map(|row| {
                Ok(ScheduleTick {
                    tick: row.tick,
                    outcome: row.outcome.parse::<TickOutcome>().map_err(|_| {
                        super::StoreError::Corrupt(format!("schedule_ticks.outcome '{}'", row.outcome))
                    })?,
                    run_id: row.run_id,
                    status: row.status.as_deref().map(parse::<RunStatus>).transpose()?,
                    error: row.error,
                    handled_at: row.handled_at,
                })
            })
            .collect()
    }

    /// Enabled schedules whose next tick is at or before `now`, the most overdue first; and
    /// whether any schedule is enabled at all (one statement: the due ones and the next one).
    #[tracing::instrument(skip_all, err)]
    pub async fn due_schedules(
        &self,
        now: DateTime<Utc>,
        limit: i64,
    ) -> StoreResult<(Vec<DueSchedule>, bool)> {
        let rows = sqlx::query!(
            r#"(SELECT id, tenant, cron, timezone, kickoff, overlap, catch_up, next_run_at
                  FROM schedules WHERE enabled AND next_run_at <= $1 ORDER BY next_run_at LIMIT $2)
               UNION ALL
               (SELECT id, tenant, cron, timezone, kickoff, overlap, catch_up, next_run_at
                  FROM schedules WHERE enabled AND next_run_at > $1 ORDER BY next_run_at LIMIT 1)"#,
            now,
            limit
        )
        .fetch_all(&self.pool)
        .await?;
        let any_enabled = !rows.is_empty();
        let strum = |s: &str| super::StoreError::Corrupt(format!("schedules: '{s}'"));
        let mut due = Vec::new();
        for row in rows {
            let (
                Some(id),
                Some(tenant),
                Some(cron),
                Some(timezone),
                Some(kickoff),
                Some(overlap),
                Some(catch_up),
                Some(next_run_at),
            ) = (
                row.id,
                row.tenant,
                row.cron,
                row.timezone,
                row.kickoff,
                row.overlap,
                row.catch_up,
                row.next_run_at,
            )
            else {
                continue;
            };
            if next_run_at > now {
                continue;
            }
            due.push(DueSchedule {
                id,
                tenant: TenantId::from(tenant),
                cron,
                timezone,
                kickoff: decode(kickoff, "schedules.kickoff")?,
                overlap: overlap.parse().map_err(|_| strum(&overlap))?,
                catch_up: catch_up.parse().map_err(|_| strum(&catch_up))?,
                next_run_at,
            });
        }
        Ok((due, any_enabled))
    }

    /// Handle the `ticks` of schedule `id` whose next tick was `due` (another replica that got
    /// there first makes this a no-op: `false`), and advance it to `next` (`None`: no tick
    /// left). One transaction: every tick's run and row, and the advance, or nothing.
    #[tracing::instrument(skip_all, fields(schedule_id = %id, ticks = ticks.len()), err)]
    pub async fn handle_ticks(
        &self,
        id: ScheduleId,
        due: DateTime<Utc>,
        ticks: Vec<(DateTime<Utc>, TickAction)>,
        next: Option<DateTime<Utc>>,
    ) -> StoreResult<bool> {
        let mut tx = self.pool.begin().await?;
        let schedule = sqlx::query!(
            "SELECT overlap FROM schedules WHERE id = $1 AND enabled AND next_run_at = $2 FOR UPDATE SKIP LOCKED",
            id.0,
            due
        )
        .fetch_optional(&mut *tx)
        .await?;
        let Some(schedule) = schedule else { return Ok(false) };
        let overlap: Overlap = schedule
            .overlap
            .parse()
            .map_err(|_| super::StoreError::Corrupt(format!("schedules.overlap '{}'", schedule.overlap)))?;
        let last = ticks.last().map(|(tick, _)| *tick);
        for (tick, action) in ticks {
            let (outcome, run_id, error) = match action {
                TickAction::Missed => (TickOutcome::Missed, None, None),
                TickAction::Failed(why) => (TickOutcome::Failed, None, Some(why)),
                TickAction::Fire(run) => fire(&mut tx, id.0, overlap, &run).await?,
            };
            let outcome: &str = outcome.into();
            sqlx::query!(
                "INSERT INTO schedule_ticks (schedule_id, tick, outcome, run_id, error) VALUES ($1, $2, $3, $4, $5)",
                id.0,
                tick,
                outcome,
                run_id,
                error
            )
            .execute(&mut *tx)
            .await?;
        }
        sqlx::query!(
            r#"UPDATE schedules SET next_run_at = $2, last_tick_at = coalesce($3, last_tick_at), updated_at = now()
                WHERE id = $1"#,
            id.0,
            next,
            last
        )
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(true)
    }
}

/// Kick off a tick's run in `tx`, as the schedule's `overlap` says (a run that joins a thread is
/// ordered by its thread): how the tick ended.
async fn fire(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    schedule: Uuid,
    overlap: Overlap,
    run: &NewRun,
) -> StoreResult<(TickOutcome, Option<Uuid>, Option<String>)> {
    let running = sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM runs WHERE schedule_id = $1 AND status = ANY($2)) AS "running!""#,
        schedule,
        &RUNNING.map(String::from)
    )
    .fetch_one(&mut **tx)
    .await?;
    if running && overlap == Overlap::Skip {
        return Ok((TickOutcome::Skipped, None, None));
    }
    if let Err(full) = hold_queue(tx, std::slice::from_ref(run)).await? {
        return Ok((TickOutcome::Failed, None, Some(full.to_string())));
    }
    let row = QueuedRun::new(run, Utc::now().trunc_subsecs(6))?;
    let status = match &run.thread {
        Some(join) => match insert_in_thread(tx, &row, run, join).await? {
            InThread::Stored(status) => status,
            InThread::NoThread => {
                return Ok((TickOutcome::Failed, None, Some(format!("no thread {}", join.thread_id))))
            }
            InThread::Busy(_) => {
                return Ok((TickOutcome::Skipped, None, Some("a run of its thread has not ended".into())));
            }
        },
        None => {
            insert_runs(tx, std::slice::from_ref(&row)).await?;
            if running && overlap == Overlap::Enqueue {
                RunStatus::Waiting
            } else {
                RunStatus::Queued
            }
        }
    };
    sqlx::query!(
        "UPDATE runs SET schedule_id = $2, status = $3 WHERE id = $1",
        run.id.0,
        schedule,
        status.as_str()
    )
    .execute(&mut **tx)
    .await?;
    Ok((TickOutcome::Kicked, Some(run.id.0), None))
}
