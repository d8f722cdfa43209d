//! Schedules (`/v1/schedules`): crews that run on their own. Creating one checks its cron
//! expression, its time zone and its kickoff (as `POST /v1/kickoffs` would: an unknown crew is a
//! 422 now, not a failed tick later) and computes its next tick on the service's clock; the
//! scheduler prepares each tick's run here too.

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::{ServiceError, ServiceResult, Services};
use crate::domain::kickoff::NewRun;
use crate::domain::schedule::SchedulePage;
use crate::domain::schedule::{CatchUp, Overlap, Schedule, ScheduleTick, Timetable};
use crate::domain::validate::{check_text, parse_json, TextKind};
use crate::domain::ScheduleId;
use crate::domain::TenantId;
use crate::domain::ThreadId;
use crate::domain::{Caller, FieldError};
use crate::store::{Audit, ScheduleFields};

/// The body of `POST /v1/schedules`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NewScheduleBody {
    #[serde(default)]
    name: Option<String>,
    cron: String,
    #[serde(default = "utc")]
    timezone: String,
    kickoff: Map<String, Value>,
    #[serde(default)]
    overlap: Overlap,
    #[serde(default)]
    catch_up: CatchUp,
    #[serde(default = "yes")]
    enabled: bool,
}

/// The body of `PATCH /v1/schedules/{id}`: what to change.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SchedulePatch {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    cron: Option<String>,
    #[serde(default)]
    timezone: Option<String>,
    #[serde(default)]
    kickoff: Option<Map<String, Value>>,
    #[serde(default)]
    overlap: Option<Overlap>,
    #[serde(default)]
    catch_up: Option<CatchUp>,
    #[serde(default)]
    enabled: Option<bool>,
}

fn utc() -> String {
    "UTC".to_owned()
}

fn yes() -> bool {
    true
}

impl Services {
    /// A new schedule of the caller's tenant.
    pub async fn create_schedule(
        &self,
        caller: &Caller,
        body: Value,
        audit: &Audit,
    ) -> ServiceResult<Schedule> {
        let body: NewScheduleBody = parse_json(body).map_err(ServiceError::Invalid)?;
        let fields = ScheduleFields {
            name: body.name,
            cron: body.cron,
            timezone: body.timezone,
            kickoff: body.kickoff,
            overlap: body.overlap,
            catch_up: body.catch_up,
            enabled: body.enabled,
            next_run_at: None,
        };
        let fields = self.checked(&caller.tenant, fields).await?;
        let schedule = self.store.create_schedule(&caller.tenant, &fields, audit).await?;
        self.schedules_changed.notify_one();
        Ok(schedule)
    }

    /// One of the tenant's schedules.
    pub async fn schedule(&self, caller: &Caller, id: ScheduleId) -> ServiceResult<Schedule> {
        self.store.get_schedule(&caller.tenant, id).await?.ok_or_else(|| no_schedule(id))
    }

    /// The tenant's schedules, newest first.
    pub async fn schedules(
        &self,
        caller: &Caller,
        before: Option<ScheduleId>,
        limit: i64,
    ) -> ServiceResult<SchedulePage> {
        Ok(self.store.list_schedules(&caller.tenant, before, limit).await?)
    }

    /// Change a schedule: the fields given; its next tick is computed again from now when its
    /// expression, zone or `enabled` changes (a schedule enabled again does not catch up on the
    /// ticks it had while disabled).
    pub async fn update_schedule(
        &self,
        caller: &Caller,
        id: ScheduleId,
        body: Value,
        audit: &Audit,
    ) -> ServiceResult<Schedule> {
        let patch: SchedulePatch = parse_json(body).map_err(ServiceError::Invalid)?;
        let current = self.schedule(caller, id).await?;
        let retimed = patch.cron.is_some() || patch.timezone.is_some() || patch.enabled.is_some();
        let fields = ScheduleFields {
            name: patch.name.or(current.name),
            cron: patch.cron.unwrap_or(current.cron),
            timezone: patch.timezone.unwrap_or(current.timezone),
            kickoff: patch.kickoff.unwrap_or(current.kickoff),
            overlap: patch.overlap.unwrap_or(current.overlap),
            catch_up: patch.catch_up.unwrap_or(current.catch_up),
            enabled: patch.enabled.unwrap_or(current.enabled),
            next_run_at: current.next_run_at,
        };
        let mut fields = self.checked(&caller.tenant, fields).await?;
        if !retimed && fields.enabled {
            fields.next_run_at = current.next_run_at.or(fields.next_run_at);
        }
        let schedule = self.store.update_schedule(&caller.tenant, id, &fields, audit).await?;
        self.schedules_changed.notify_one();
        schedule.ok_or_else(|| no_schedule(id))
    }

    /// Delete a schedule (its runs stay).
    pub async fn delete_schedule(&self, caller: &Caller, id: ScheduleId, audit: &Audit) -> ServiceResult<()> {
        match self.store.delete_schedule(&caller.tenant, id, audit).await? {
            true => Ok(()),
            false => Err(no_schedule(id)),
        }
    }

    /// A schedule's handled ticks with their runs, newest first.
    pub async fn schedule_runs(
        &self,
        caller: &Caller,
        id: ScheduleId,
        before: Option<DateTime<Utc>>,
        limit: i64,
    ) -> ServiceResult<Vec<ScheduleTick>> {
        self.schedule(caller, id).await?;
        Ok(self.store.schedule_ticks(id, before, limit).await?)
    }

    /// The run a tick of a schedule of `tenant` kicks off, admitted under the tenant's quotas
    /// (its `max_queued` is kept when the tick stores it); or why it cannot be (recorded with the
    /// tick).
    pub async fn scheduled_run(
        &self,
        tenant: &TenantId,
        kickoff: &Map<String, Value>,
    ) -> Result<NewRun, String> {
        let prepared = async {
            let mut run = self.prepare_kickoff(tenant, Value::Object(kickoff.clone()), None).await?;
            self.admit(tenant, std::slice::from_mut(&mut run)).await?;
            Ok::<_, ServiceError>(run)
        };
        prepared.await.map_err(|error| match error {
            ServiceError::Invalid(errors) => {
                let fields: Vec<String> =
                    errors.iter().map(|e| format!("kickoff.{}: {}", e.field, e.message)).collect();
                fields.join("; ")
            }
            other => other.to_string(),
        })
    }

    /// A schedule's fields checked (cron expression, time zone, kickoff, name), with its next
    /// tick from now when it is enabled.
    async fn checked(&self, tenant: &TenantId, mut fields: ScheduleFields) -> ServiceResult<ScheduleFields> {
        let mut errors: Vec<FieldError> = Vec::new();
        if let Some(name) = &fields.name {
            if name.trim().is_empty() || name.chars().count() > 200 {
                errors.push(FieldError::new("name", "must be 1 to 200 characters, not blank"));
            } else if let Err(error) = check_text("name", name, TextKind::Line) {
                errors.push(error);
            }
        }
        let timetable = match Timetable::parse(&fields.cron, &fields.timezone) {
            Ok(timetable) => Some(timetable),
            Err(found) => {
                errors.extend(found);
                None
            }
        };
        match self.prepare_kickoff(tenant, Value::Object(fields.kickoff.clone()), None).await {
            Ok(run) => {
                if let Some(join) = &run.thread {
                    if self.store.get_thread(tenant, ThreadId(join.thread_id)).await?.is_none() {
                        errors.push(FieldError::new(
                            "kickoff.thread_id",
                            format!("no thread {}", join.thread_id),
                        ));
                    }
                }
            }
            Err(ServiceError::Invalid(found)) => errors.extend(found.into_iter().map(|e| e.under("kickoff"))),
            Err(ServiceError::NotFound(message)) => errors.push(FieldError::new("kickoff.crew", message)),
            Err(other) => return Err(other),
        }
        if !errors.is_empty() {
            return Err(ServiceError::Invalid(errors));
        }
        fields.next_run_at = match (fields.enabled, timetable) {
            (true, Some(timetable)) => timetable.next_after(self.clock.now()),
            _ => None,
        };
        Ok(fields)
    }
}

fn no_schedule(id: ScheduleId) -> ServiceError {
    ServiceError::NotFound(format!("no schedule {id}"))
}
