//! The scheduler every replica with workers runs: on each pass it reads the schedules whose next
//! tick is due (on the services' clock), decides for each due tick whether it fires or was missed
//! (`catch_up`, the misfire grace), prepares the runs of those that fire, and hands it all to the
//! store, which handles a schedule's ticks and advances it in one transaction under its row lock.
//! Replicas race for a schedule harmlessly: the loser finds it advanced (or locked) and does
//! nothing; a replica killed mid-pass leaves the transaction uncommitted, and the next pass (of
//! any replica) handles the same ticks.

use tokio_util::sync::CancellationToken;

use crate::domain::schedule::{plan_ticks, SchedulerSettings, TickPlan, Timetable, MAX_TICKS_PER_PASS};
use crate::domain::ScheduleId;
use crate::service::Services;
use crate::store::{DueSchedule, Store, StoreResult, TickAction};

/// Due schedules one pass takes at most.
const DUE_PER_PASS: i64 = 64;
/// How often a scheduler with no enabled schedule looks again without being told.
const IDLE_RECHECK: std::time::Duration = std::time::Duration::from_secs(10);

/// The scheduler of one replica.
pub struct Scheduler {
    store: Store,
    services: Services,
    settings: SchedulerSettings,
}

impl Scheduler {
    pub fn new(store: Store, services: Services, settings: SchedulerSettings) -> Self {
        Self { store, services, settings }
    }

    /// Pass after pass until `shutdown`: every `poll` while some schedule is enabled; else every
    /// ten seconds, or at once when a schedule is created or changed through this replica. (No
    /// `LISTEN` of its own: every listening connection reads the whole notification queue, a cost
    /// every kickoff would pay.) A replica without enabled schedules costs the database one
    /// statement every ten seconds; a schedule created on another replica is seen here within
    /// ten seconds, and its ticks are handled by whichever replica gets there first.
    pub async fn run(self, shutdown: CancellationToken) {
        tracing::info!(poll_ms = self.settings.poll.as_millis() as u64, "scheduler started");
        loop {
            let active = match self.pass().await {
                Ok((_, any_enabled)) => any_enabled,
                Err(error) => {
                    tracing::warn!(%error, "a scheduler pass failed; the next one tries again");
                    true
                }
            };
            let wait = if active { self.settings.poll } else { IDLE_RECHECK };
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep(wait) => {}
                () = self.services.schedules_changed().notified() => {}
            }
        }
    }

    /// Handle every due schedule once: how many this replica advanced, and whether any schedule
    /// is enabled.
    pub async fn pass(&self) -> StoreResult<(usize, bool)> {
        let now = self.services.now();
        let (due, any_enabled) = self.store.due_schedules(now, DUE_PER_PASS).await?;
        let mut advanced = 0;
        for schedule in due {
            match self.handle(&schedule, now).await {
                Ok(true) => advanced += 1,
                Ok(false) => {}
                Err(error) => {
                    tracing::warn!(%error, schedule_id = %schedule.id, "a schedule's ticks were not handled")
                }
            }
        }
        Ok((advanced, any_enabled))
    }

    /// Handle the due ticks of `schedule` at `now`.
    async fn handle(&self, schedule: &DueSchedule, now: chrono::DateTime<chrono::Utc>) -> StoreResult<bool> {
        let timetable = match Timetable::parse(&schedule.cron, &schedule.timezone) {
            Ok(timetable) => timetable,
            Err(errors) => {
                // Checked when it was stored: only a newer time zone database could refuse it.
                let why: Vec<String> = errors.iter().map(|e| format!("{}: {}", e.field, e.message)).collect();
                tracing::warn!(schedule_id = %schedule.id, why = %why.join("; "), "a schedule cannot be read");
                let ticks = vec![(schedule.next_run_at, TickAction::Failed(why.join("; ")))];
                return self
                    .store
                    .handle_ticks(ScheduleId(schedule.id), schedule.next_run_at, ticks, None)
                    .await;
            }
        };
        let ticks = timetable.ticks(schedule.next_run_at, now, MAX_TICKS_PER_PASS);
        let grace = chrono::Duration::from_std(self.settings.misfire_grace).unwrap_or(chrono::Duration::MAX);
        let mut actions = Vec::with_capacity(ticks.len());
        for (tick, plan) in plan_ticks(&ticks, now, grace, schedule.catch_up) {
            let action = match plan {
                TickPlan::Missed => TickAction::Missed,
                TickPlan::Fire => {
                    match self.services.scheduled_run(&schedule.tenant, &schedule.kickoff).await {
                        Ok(run) => TickAction::Fire(Box::new(run)),
                        Err(why) => TickAction::Failed(why),
                    }
                }
            };
            actions.push((tick, action));
        }
        // After the last tick looked at (or now, when more were due than one pass looks at).
        let from = match ticks.len() < MAX_TICKS_PER_PASS {
            true => ticks.last().copied().unwrap_or(now),
            false => now,
        };
        let next = timetable.next_after(from.max(schedule.next_run_at));
        self.store.handle_ticks(ScheduleId(schedule.id), schedule.next_run_at, actions, next).await
    }
}
