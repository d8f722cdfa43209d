//! Webhooks: a run's committed events pushed to endpoints, signed the Standard Webhooks way.
//!
//! - Endpoints are registered (`/v1/webhooks`: every run, or one crew's) or come with a kickoff
//!   (its `webhooks`: that run's). Each takes a list of event patterns: exact types, `prefix.*`,
//!   `*`.
//! - The outbox is the database: a trigger on the event log writes one delivery per committed
//!   event and matching endpoint in the event's transaction, so a delivery exists if and only if
//!   its event committed, and counts it in the (endpoint, run) queue. A disabled endpoint's
//!   deliveries are kept, not sent, until it is enabled again.
//! - Every replica runs a [`deliver::Deliverer`]: it leases due queues and sends each queue's
//!   deliveries in `seq` order, so one run's events reach one endpoint in order while other runs
//!   go on; a failure puts that queue off by the retry schedule (see [`RetrySchedule`]).

pub mod deliver;
pub mod signing;

use std::time::Duration;

use crate::domain::EventType;
use crate::outbound::egress::EgressPolicy;
pub use signing::{EndpointSecret, SigningKey};

/// Patterns per endpoint, at most.
pub const MAX_PATTERNS: usize = 64;
/// Webhooks one kickoff may carry, at most.
pub const MAX_KICKOFF_WEBHOOKS: usize = 10;
/// The longest webhook URL.
pub const MAX_URL_BYTES: usize = 2048;
/// The longest endpoint description.
pub const MAX_DESCRIPTION_BYTES: usize = 1024;

/// How webhooks are signed, where they may go and how failures are retried.
#[derive(Debug, Clone)]
pub struct WebhookSettings {
    /// The server's signing secret; without one, webhooks are not available.
    pub key: Option<SigningKey>,
    /// Private hosts and networks webhook URLs may point at.
    pub egress: EgressPolicy,
    /// The delays between attempts.
    pub schedule: RetrySchedule,
    /// How long a rotated-out secret keeps signing.
    pub rotation_grace: Duration,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        Self {
            key: None,
            egress: EgressPolicy::default(),
            schedule: RetrySchedule::default(),
            rotation_grace: Duration::from_secs(24 * 3600),
        }
    }
}

/// The delays before the second, third, ... attempt of a delivery; when they are used up, the
/// delivery has failed and its endpoint is disabled. Each delay is varied by up to ±10 %.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetrySchedule(pub Vec<Duration>);

impl Default for RetrySchedule {
    /// 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h: eight attempts over about 27.6 hours.
    fn default() -> Self {
        let minutes = |m: u64| Duration::from_secs(m * 60);
        Self(vec![
            Duration::from_secs(5),
            minutes(5),
            minutes(30),
            minutes(120),
            minutes(300),
            minutes(600),
            minutes(600),
        ])
    }
}

impl RetrySchedule {
    /// Read `5s,5m,30m,2h` (units `ms`, `s`, `m`, `h`; 1 to 20 delays).
    pub fn parse(text: &str) -> Result<Self, String> {
        let delays = text
            .split(',')
            .map(str::trim)
            .map(|item| {
                let split = item.find(|c: char| !c.is_ascii_digit()).unwrap_or(item.len());
                let (number, unit) = item.split_at(split);
                let n: u64 = number.parse().map_err(|_| format!("'{item}' is not a delay like 30s"))?;
                let delay = match unit {
                    "ms" => Duration::from_millis(n),
                    "s" => Duration::from_secs(n),
                    "m" => Duration::from_secs(n * 60),
                    "h" => Duration::from_secs(n * 3600),
                    _ => return Err(format!("'{item}': the unit must be ms, s, m or h")),
                };
                Ok(delay)
            })
            .collect::<Result<Vec<_>, _>>()?;
        if delays.is_empty() || delays.len() > 20 {
            return Err("give 1 to 20 delays".into());
        }
        Ok(Self(delays))
    }

    /// Attempts in all.
    pub fn attempts(&self) -> u32 {
        self.0.len() as u32 + 1
    }

    /// The delay after the `attempt`-th failed attempt (1-based), jittered by `jitter` in
    /// [-1, 1]; `None` when that was the last.
    pub fn delay_after(&self, attempt: u32, jitter: f64) -> Option<Duration> {
        let base = self.0.get(attempt.checked_sub(1)? as usize)?;
        Some(base.mul_f64(1.0 + 0.1 * jitter.clamp(-1.0, 1.0)))
    }
}

/// Check an endpoint's event patterns: `*`, an event type, or `<prefix>.*` of one.
pub fn check_patterns(patterns: &[String]) -> Result<(), String> {
    if patterns.is_empty() || patterns.len() > MAX_PATTERNS {
        return Err(format!("must hold 1 to {MAX_PATTERNS} patterns"));
    }
    for pattern in patterns {
        if pattern == "*" || pattern.parse::<EventType>().is_ok() {
            continue;
        }
        if pattern == "llm.delta" {
            return Err("'llm.delta' is live only (SSE): webhooks carry committed events".into());
        }
        let known_prefix = pattern.strip_suffix(".*").is_some_and(|prefix| {
            EventType::ALL.iter().any(|t| t.as_str().starts_with(&format!("{prefix}.")))
        });
        if !known_prefix {
            return Err(format!(
                "'{pattern}' is not an event type, '<prefix>.*' of one (e.g. 'task.*') or '*'"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn patterns_are_types_prefixes_or_everything() {
        assert!(check_patterns(&list(&["run.completed", "task.*", "*"])).is_ok());
        assert!(check_patterns(&list(&[])).is_err());
        for bad in ["run.finished", "nothing.*", "task*", "llm.delta", ""] {
            assert!(check_patterns(&list(&[bad])).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_schedule_spans_about_a_day_and_ends() {
        let schedule = RetrySchedule::default();
        let total: Duration = (1..schedule.attempts()).filter_map(|a| schedule.delay_after(a, 0.0)).sum();
        assert_eq!(total.as_secs(), 5 + 300 + 1800 + 7200 + 18000 + 36000 + 36000);
        assert_eq!(schedule.attempts(), 8);
        assert_eq!(schedule.delay_after(8, 0.0), None);
        assert_eq!(schedule.delay_after(1, 1.0), Some(Duration::from_millis(5500)));
        assert_eq!(RetrySchedule::parse("500ms, 2s,1m").expect("parse").0.len(), 3);
        assert!(RetrySchedule::parse("5").is_err() && RetrySchedule::parse("").is_err());
    }
}
