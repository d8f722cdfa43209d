//! Schedules: crews that run on their own, at the ticks of a cron expression in an IANA time
//! zone. Which ticks are due, which are late, and which of those fire, are decided here (pure, on
//! a time the caller passes: the service's clock, which tests replace); the store makes each
//! tick's kickoff and the schedule's advance one transaction.

use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, Utc};
use croner::parser::{CronParser, Seconds};
use croner::Cron;
use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;
use uuid::Uuid;

/// Ticks one pass looks at, at most, for one schedule (a schedule far behind is advanced to now).
pub const MAX_TICKS_PER_PASS: usize = 1_000;

/// How the scheduler runs (`schedule_poll_ms`, `schedule_misfire_grace_s`).
#[derive(Debug, Clone, Copy)]
pub struct SchedulerSettings {
    /// How often it looks for due schedules.
    pub poll: Duration,
    /// How late a tick may be and still fire; later ones are missed (see `catch_up`).
    pub misfire_grace: Duration,
}

/// A time source: the system's, or one a test moves by hand.
pub trait Clock: Send + Sync + std::fmt::Debug {
    fn now(&self) -> DateTime<Utc>;
}

/// The system's clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock a test sets and moves by hand.
#[derive(Debug)]
pub struct ManualClock(std::sync::Mutex<DateTime<Utc>>);

impl ManualClock {
    pub fn at(now: DateTime<Utc>) -> Self {
        Self(std::sync::Mutex::new(now))
    }

    /// Set the time.
    pub fn set(&self, now: DateTime<Utc>) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = now;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

snake_case_enum! {
    /// What a tick does while a run of the schedule has not ended.
    #[derive(Default)]
    #[strum(serialize_all = "snake_case")]
    pub enum Overlap {
        /// The tick is skipped (recorded as `skipped`).
        #[default]
        Skip,
        /// The tick's run waits for the schedule's unfinished runs, then runs.
        Enqueue,
        /// The tick's run runs at once, beside them.
        Allow,
    }
}

snake_case_enum! {
    /// What happens to ticks that were missed (the service was down or behind by more than the
    /// misfire grace).
    #[derive(Default)]
    #[strum(serialize_all = "snake_case")]
    pub enum CatchUp {
        /// Missed ticks are recorded as `missed` and not run.
        #[default]
        None,
        /// The latest missed tick runs (once); the earlier ones are recorded as `missed`.
        Latest,
    }
}

/// A schedule's cron expression and time zone, parsed.
#[derive(Debug, Clone)]
pub struct Timetable {
    cron: Cron,
    zone: chrono_tz::Tz,
}

impl Timetable {
    /// Parse `expression` (5 fields, or 6 with seconds first; names like `MON-FRI`, `JAN`) in
    /// time zone `zone` (IANA, e.g. `Europe/Berlin`); errors name the field.
    pub fn parse(expression: &str, zone: &str) -> Result<Self, Vec<super::FieldError>> {
        let mut errors = Vec::new();
        let fields = expression.split_whitespace().count();
        let cron = if !(5..=6).contains(&fields) {
            errors.push(super::FieldError::new(
                "cron",
                "must have 5 fields (minute hour day-of-month month day-of-week), or 6 with seconds first",
            ));
            None
        } else {
            match CronParser::builder().seconds(Seconds::Optional).build().parse(expression) {
                Ok(cron) => Some(cron),
                Err(e) => {
                    errors
                        .push(super::FieldError::new("cron", format!("is not a valid cron expression: {e}")));
                    None
                }
            }
        };
        let zone = match chrono_tz::Tz::from_str(zone) {
            Ok(zone) => Some(zone),
            Err(_) => {
                errors.push(super::FieldError::new(
                    "timezone",
                    format!("'{zone}' is not an IANA time zone (e.g. Europe/Berlin, UTC)"),
                ));
                None
            }
        };
        match (cron, zone) {
            (Some(cron), Some(zone)) if errors.is_empty() => {
                let timetable = Self { cron, zone };
                match timetable.next_after(Utc::now()) {
                    Some(_) => Ok(timetable),
                    None => Err(vec![super::FieldError::new("cron", "never matches a time")]),
                }
            }
            _ => Err(errors),
        }
    }

    /// The first tick strictly after `after`. Wall-clock times a daylight-saving change skips run
    /// at the first time after the change; a fixed time the change repeats runs once, at its first
    /// occurrence (an expression with a wildcard hour runs in both); `croner` decides.
    pub fn next_after(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let local = after.with_timezone(&self.zone);
        self.cron.find_next_occurrence(&local, false).ok().map(|t| t.with_timezone(&Utc))
    }

    /// The ticks from `from` (inclusive, itself a tick) up to `now` (inclusive), oldest first, at
    /// most `limit`.
    pub fn ticks(&self, from: DateTime<Utc>, now: DateTime<Utc>, limit: usize) -> Vec<DateTime<Utc>> {
        let mut ticks = Vec::new();
        let mut tick = Some(from);
        while let Some(t) = tick.filter(|t| *t <= now && ticks.len() < limit) {
            ticks.push(t);
            tick = self.next_after(t);
        }
        ticks
    }
}

/// What to do with one due tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TickPlan {
    /// Kick off a run for it.
    Fire,
    /// Record it as missed.
    Missed,
}

/// Which of the due `ticks` (oldest first) fire at `now`: those at most `grace` late, and under
/// `catch_up: latest` the newest late one when no tick after it is on time.
pub fn plan_ticks(
    ticks: &[DateTime<Utc>],
    now: DateTime<Utc>,
    grace: chrono::Duration,
    catch_up: CatchUp,
) -> Vec<(DateTime<Utc>, TickPlan)> {
    let late = |t: &DateTime<Utc>| now - *t > grace;
    let last_late = ticks.iter().rposition(late);
    let any_on_time = ticks.iter().any(|t| !late(t));
    ticks
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let fire = !late(t) || (catch_up == CatchUp::Latest && Some(i) == last_late && !any_on_time);
            (*t, if fire { TickPlan::Fire } else { TickPlan::Missed })
        })
        .collect()
}

/// A schedule as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Schedule {
    pub id: Uuid,
    pub name: Option<String>,
    /// 5 fields (minute hour day-of-month month day-of-week) or 6 with seconds first.
    pub cron: String,
    /// An IANA time zone.
    pub timezone: String,
    /// The kickoff each tick makes: as `POST /v1/kickoffs` takes it (a crew or a registered
    /// crew's name, inputs, thread_id...).
    #[schema(value_type = Object)]
    pub kickoff: Map<String, Value>,
    pub overlap: Overlap,
    pub catch_up: CatchUp,
    pub enabled: bool,
    /// The next tick (absent while disabled).
    pub next_run_at: Option<DateTime<Utc>>,
    /// The last tick handled (fired, skipped or missed).
    pub last_tick_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

snake_case_enum! {
    /// How a tick ended.
    #[strum(serialize_all = "snake_case")]
    pub enum TickOutcome {
        /// A run was kicked off.
        Kicked,
        /// A run of the schedule had not ended (`overlap: skip`).
        Skipped,
        /// The tick was missed (`catch_up`).
        Missed,
        /// The kickoff was refused (the crew was deleted, a quota...): `error` says why.
        Failed,
    }
}

/// One handled tick of a schedule.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ScheduleTick {
    pub tick: DateTime<Utc>,
    pub outcome: TickOutcome,
    /// Its run (a kicked tick's, while the run exists).
    pub run_id: Option<Uuid>,
    /// The run's status, while it exists.
    pub status: Option<super::RunStatus>,
    /// Why its kickoff was refused.
    pub error: Option<String>,
    /// When it was handled.
    pub handled_at: DateTime<Utc>,
}

/// One page of schedules, newest first.
#[derive(Debug)]
pub struct SchedulePage {
    pub schedules: Vec<Schedule>,
    pub next_before: Option<Uuid>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        text.parse().expect("time")
    }

    #[test]
    fn expressions_and_zones_are_checked_and_name_their_field() {
        assert!(Timetable::parse("0 9 * * MON-FRI", "Europe/Berlin").is_ok());
        assert!(Timetable::parse("*/5 0 9 * * *", "UTC").is_ok());
        let fields = |cron: &str, zone: &str| -> Vec<String> {
            Timetable::parse(cron, zone).expect_err("refused").into_iter().map(|e| e.field).collect()
        };
        assert_eq!(fields("61 * * * *", "UTC"), ["cron"]);
        assert_eq!(fields("* * *", "UTC"), ["cron"]);
        assert_eq!(fields("0 9 * * *", "Mars/Olympus"), ["timezone"]);
        assert_eq!(fields("nonsense", "Nowhere"), ["cron", "timezone"]);
        assert_eq!(fields("0 0 30 2 *", "UTC"), ["cron"]);
    }

    #[test]
    fn weekday_mornings_in_berlin_are_at_nine_local_time() {
        let table = Timetable::parse("0 9 * * MON-FRI", "Europe/Berlin").expect("parsed");
        // Friday 2026-12-04 10:00 UTC is 11:00 in Berlin: the next is Monday 09:00 CET = 08:00 UTC.
        assert_eq!(table.next_after(at("2026-12-04T10:00:00Z")), Some(at("2026-12-07T08:00:00Z")));
        // In summer, CEST: 07:00 UTC.
        assert_eq!(table.next_after(at("2026-07-01T10:00:00Z")), Some(at("2026-07-02T07:00:00Z")));
    }

    #[test]
    fn daylight_saving_changes_skip_and_repeat_as_cron_does() {
        // Berlin springs forward on 2026-03-29 at 02:00 (to 03:00): 02:30 does not exist that day
        // and runs at 03:00 CEST (01:00 UTC); the day before and after, at 02:30 local.
        let daily = Timetable::parse("30 2 * * *", "Europe/Berlin").expect("parsed");
        let ticks = daily.ticks(at("2026-03-28T01:30:00Z"), at("2026-03-30T12:00:00Z"), 10);
        assert_eq!(
            ticks,
            [at("2026-03-28T01:30:00Z"), at("2026-03-29T01:00:00Z"), at("2026-03-30T00:30:00Z")]
        );
        // It falls back on 2026-10-25 at 03:00 (to 02:00): 02:30 happens twice, and runs once.
        let ticks = daily.ticks(at("2026-10-24T00:30:00Z"), at("2026-10-26T12:00:00Z"), 10);
        assert_eq!(
            ticks,
            [at("2026-10-24T00:30:00Z"), at("2026-10-25T00:30:00Z"), at("2026-10-26T01:30:00Z")]
        );
    }

    #[test]
    fn late_ticks_fire_only_as_catch_up_says() {
        let grace = chrono::Duration::seconds(60);
        let now = at("2026-12-04T12:00:00Z");
        let ticks = [at("2026-12-04T11:57:00Z"), at("2026-12-04T11:58:00Z"), at("2026-12-04T11:59:30Z")];
        let plans = |catch_up| -> Vec<TickPlan> {
            plan_ticks(&ticks, now, grace, catch_up).into_iter().map(|(_, p)| p).collect()
        };
        assert_eq!(plans(CatchUp::None), [TickPlan::Missed, TickPlan::Missed, TickPlan::Fire]);
        assert_eq!(plans(CatchUp::Latest), [TickPlan::Missed, TickPlan::Missed, TickPlan::Fire]);
        let late_only = &ticks[..2];
        let plans: Vec<TickPlan> =
            plan_ticks(late_only, now, grace, CatchUp::Latest).into_iter().map(|(_, p)| p).collect();
        assert_eq!(plans, [TickPlan::Missed, TickPlan::Fire]);
        let plans: Vec<TickPlan> =
            plan_ticks(late_only, now, grace, CatchUp::None).into_iter().map(|(_, p)| p).collect();
        assert_eq!(plans, [TickPlan::Missed, TickPlan::Missed]);
    }
}
