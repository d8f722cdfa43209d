//! Requests-per-minute gates (GCRA with a burst of one): a limit of N per minute lets one call
//! through every 60/N seconds, spacing calls evenly as providers quantise their limits. Callers
//! reserve a start time (never blocking a thread: they sleep asynchronously until it) across
//! several keys at once; a provider's 429 pushes its key's schedule back. Time is injectable.
//!
//! [`RateLimiter`] holds one replica's gates (a run's `max_rpm`, a provider's 429 holds).
//! A provider's `rpm` and `tpm` are budgets of the whole cluster: a [`SharedBudget`] keeps their
//! schedules where every replica sees them (Postgres in `agentd serve`; [`LocalBudget`] in one
//! process). Each key is a GCRA schedule whose calls cost time: a request costs `60 s / rpm` on
//! the request key, its estimated tokens `tokens × 60 s / tpm` on the token key, corrected once
//! the provider reports what the call used.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

/// A source of the current instant.
pub type Clock = Arc<dyn Fn() -> Instant + Send + Sync>;

/// One limit to respect: a key and its requests per minute (`None`: no spacing, but holds on
/// the key, such as a provider's 429, still apply).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limit {
    pub key: String,
    pub per_minute: Option<u32>,
}

impl Limit {
    pub fn new(key: impl Into<String>, per_minute: u32) -> Self {
        Self { key: key.into(), per_minute: Some(per_minute) }
    }

    /// A key with no budget of its own, only holds.
    pub fn holds_only(key: impl Into<String>) -> Self {
        Self { key: key.into(), per_minute: None }
    }

    /// The spacing between calls.
    pub fn interval(&self) -> Duration {
        self.per_minute.map_or(Duration::ZERO, |n| Duration::from_secs(60) / n.max(1))
    }

    /// How the limit reads in a `run.throttled` event.
    pub fn describe(&self) -> String {
        match self.per_minute {
            Some(n) => format!("{} ({n}/min)", self.key),
            None => format!("{} (provider asked to wait)", self.key),
        }
    }
}

/// A booking on a shared schedule: what a call costs on `key`.
#[derive(Debug, Clone, PartialEq)]
pub struct Reservation {
    pub key: String,
    pub cost: Duration,
}

/// The answer of a [`SharedBudget`].
pub type BudgetFuture<'a, T> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<T, String>> + Send + 'a>>;

/// Schedules shared by every replica (see the module's documentation).
pub trait SharedBudget: Send + Sync {
    /// Book the earliest start, not before `after` from now, at which every key is free, each key
    /// then busy for its cost after it; the wait until that start.
    fn reserve<'a>(&'a self, reservations: &'a [Reservation], after: Duration) -> BudgetFuture<'a, Duration>;
    /// Move `key`'s schedule by `seconds` (negative: give back what a call did not use).
    fn adjust<'a>(&'a self, key: &'a str, seconds: f64) -> BudgetFuture<'a, ()>;
    /// Nothing may start on `key` for `wait` (the provider said to wait).
    fn hold<'a>(&'a self, key: &'a str, wait: Duration) -> BudgetFuture<'a, ()>;
}

/// A [`SharedBudget`] in this process's memory (tests, and a process without a database).
#[derive(Default)]
pub struct LocalBudget {
    next: Mutex<HashMap<String, Instant>>,
}

impl LocalBudget {
    fn schedules(&self) -> std::sync::MutexGuard<'_, HashMap<String, Instant>> {
        self.next.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl SharedBudget for LocalBudget {
    fn reserve<'a>(&'a self, reservations: &'a [Reservation], after: Duration) -> BudgetFuture<'a, Duration> {
        let now = Instant::now();
        let mut next = self.schedules();
        let start = reservations.iter().filter_map(|r| next.get(&r.key)).fold(now + after, |a, b| a.max(*b));
        for reservation in reservations {
            next.insert(reservation.key.clone(), start + reservation.cost);
        }
        let wait = start - now;
        Box::pin(async move { Ok(wait) })
    }

    fn adjust<'a>(&'a self, key: &'a str, seconds: f64) -> BudgetFuture<'a, ()> {
        if let Some(at) = self.schedules().get_mut(key) {
            let delta = Duration::from_secs_f64(seconds.abs().min(86_400.0));
            *at = if seconds >= 0.0 { *at + delta } else { at.checked_sub(delta).unwrap_or(*at) };
        }
        Box::pin(async { Ok(()) })
    }

    fn hold<'a>(&'a self, key: &'a str, wait: Duration) -> BudgetFuture<'a, ()> {
        let until = Instant::now() + wait;
        let mut next = self.schedules();
        let at = next.entry(key.to_owned()).or_insert(until);
        *at = (*at).max(until);
        Box::pin(async { Ok(()) })
    }
}

/// Gates keyed by name. Cheap to share.
pub struct RateLimiter {
    /// For each key, the earliest instant the next call may start.
    next: Mutex<HashMap<String, Instant>>,
    clock: Clock,
}

impl Default for RateLimiter {
    fn default() -> Self {
        Self::with_clock(Arc::new(Instant::now))
    }
}

impl std::fmt::Debug for RateLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimiter").finish_non_exhaustive()
    }
}

impl RateLimiter {
    pub fn with_clock(clock: Clock) -> Self {
        Self { next: Mutex::new(HashMap::new()), clock }
    }

    pub fn now(&self) -> Instant {
        (self.clock)()
    }

    fn gates(&self) -> std::sync::MutexGuard<'_, HashMap<String, Instant>> {
        self.next.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reserve the earliest start, not before `not_before`, that every limit allows, and book
    /// it. Returns the start. A key without a budget books nothing: booking its start would make
    /// a concurrent caller whose `not_before` is a little earlier wait for it (and announce a
    /// throttle nobody asked for).
    pub fn reserve(&self, limits: &[Limit], not_before: Instant) -> Instant {
        let mut gates = self.gates();
        let start = limits.iter().filter_map(|l| gates.get(&l.key)).fold(not_before, |a, b| a.max(*b));
        for limit in limits.iter().filter(|l| l.per_minute.is_some()) {
            gates.insert(limit.key.clone(), start + limit.interval());
        }
        start
    }

    /// Nothing may start on `key` before `until` (a provider said to wait).
    pub fn hold(&self, key: &str, until: Instant) {
        let mut gates = self.gates();
        let next = gates.entry(key.to_owned()).or_insert(until);
        *next = (*next).max(until);
    }

    /// Forget every key starting with `prefix` (a finished run's keys).
    pub fn forget(&self, prefix: &str) {
        self.gates().retain(|key, _| !key.starts_with(prefix));
    }

    /// The earliest start on `key` (now if free).
    pub fn earliest(&self, key: &str) -> Instant {
        let now = self.now();
        self.gates().get(key).map_or(now, |next| (*next).max(now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixed(at: Instant) -> RateLimiter {
        RateLimiter::with_clock(Arc::new(move || at))
    }

    #[test]
    fn a_key_without_budget_never_delays_concurrent_callers() {
        let t0 = Instant::now();
        let limiter = fixed(t0);
        let provider = [Limit::holds_only("provider")];
        let later = t0 + Duration::from_micros(30);
        assert_eq!(limiter.reserve(&provider, later), later);
        // A caller that read the clock a little earlier but reserves second goes at once.
        assert_eq!(limiter.reserve(&provider, t0), t0);
        // A hold still applies.
        limiter.hold("provider", t0 + Duration::from_secs(2));
        assert_eq!(limiter.reserve(&provider, t0) - t0, Duration::from_secs(2));
    }

    #[test]
    fn spaces_calls_evenly() {
        let t0 = Instant::now();
        let limiter = fixed(t0);
        let limits = [Limit::new("agent", 30)];
        let starts: Vec<Duration> = (0..4).map(|_| limiter.reserve(&limits, t0) - t0).collect();
        assert_eq!(starts, [0, 2, 4, 6].map(Duration::from_secs));
    }

    #[test]
    fn the_strictest_of_several_limits_wins_and_books_all() {
        let t0 = Instant::now();
        let limiter = fixed(t0);
        let both = [Limit::new("crew", 60), Limit::new("provider", 20)];
        assert_eq!(limiter.reserve(&both, t0), t0);
        assert_eq!(limiter.reserve(&both, t0) - t0, Duration::from_secs(3));
        // The crew key alone is free again one second after the second call.
        assert_eq!(limiter.reserve(&[Limit::new("crew", 60)], t0) - t0, Duration::from_secs(4));
    }

    #[test]
    fn a_hold_pushes_the_schedule_back() {
        let t0 = Instant::now();
        let limiter = fixed(t0);
        limiter.hold("provider", t0 + Duration::from_secs(10));
        assert_eq!(limiter.earliest("provider") - t0, Duration::from_secs(10));
        let start = limiter.reserve(&[Limit::new("provider", 600)], t0);
        assert_eq!(start - t0, Duration::from_secs(10));
        limiter.hold("provider", t0);
        assert_eq!(limiter.earliest("provider") - t0, Duration::from_millis(10_100), "a hold never shortens");
    }

    // The clock is paused: every wait below is exactly what the budget booked.
    #[tokio::test(start_paused = true)]
    async fn a_local_budget_books_costs_and_takes_refunds() {
        let budget = LocalBudget::default();
        let book = |rpm: u64, tokens: u64| {
            vec![
                Reservation { key: "r".into(), cost: Duration::from_millis(60_000 / rpm) },
                Reservation { key: "t".into(), cost: Duration::from_millis(tokens) },
            ]
        };
        let ms = Duration::from_millis;
        assert_eq!(budget.reserve(&book(600, 50), Duration::ZERO).await.expect("reserve"), ms(0));
        // The token key (busy 50 ms) does not bind; the request key (100 ms) does.
        assert_eq!(budget.reserve(&book(600, 500), Duration::ZERO).await.expect("reserve"), ms(100));
        // Now the token key is busy until 600 ms; a refund of 400 ms frees it at 200 ms.
        budget.adjust("t", -0.4).await.expect("adjust");
        let probe = [Reservation { key: "t".into(), cost: Duration::ZERO }];
        assert_eq!(budget.reserve(&probe, Duration::ZERO).await.expect("reserve"), ms(200));
        // 30 ms later, the wait is 30 ms shorter; `after` defers a start that would be earlier.
        tokio::time::advance(ms(30)).await;
        assert_eq!(budget.reserve(&probe, Duration::ZERO).await.expect("reserve"), ms(170));
        assert_eq!(budget.reserve(&probe, ms(500)).await.expect("reserve"), ms(500));
        budget.hold("r", Duration::from_secs(5)).await.expect("hold");
        assert_eq!(budget.reserve(&book(600, 0), Duration::ZERO).await.expect("reserve"), ms(5_000));
    }

    #[test]
    fn later_calls_are_not_delayed_by_idle_time() {
        let t0 = Instant::now();
        let limiter = fixed(t0);
        let limit = [Limit::new("k", 60)];
        limiter.reserve(&limit, t0);
        let later = t0 + Duration::from_secs(100);
        assert_eq!(limiter.reserve(&limit, later), later);
    }
}
