//! When to try a chat call again and how long to wait: exponential backoff with full jitter (the
//! provider's own `retry-after-ms` / `Retry-After` is read by [`crate::outbound::parse_retry_after`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Limits of the retry loop of one chat call.
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub max_attempts: u32,
    /// The first backoff ceiling; doubled at every attempt.
    pub base_delay: Duration,
    /// The largest backoff ceiling.
    pub max_delay: Duration,
    /// A provider asking for a longer wait than this ends the call with a rate-limit error
    /// instead of a sleep (the caller may reschedule the work).
    pub max_retry_after: Duration,
    /// Time allowed for one attempt, answer included.
    pub request_timeout: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 4,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(20),
            max_retry_after: Duration::from_secs(60),
            request_timeout: Duration::from_secs(120),
        }
    }
}

/// A source of jitter in `[0, 1)`; injectable so tests are deterministic.
pub type Jitter = Arc<dyn Fn() -> f64 + Send + Sync>;

/// Computes backoff delays.
#[derive(Clone)]
pub struct Backoff {
    policy: RetryPolicy,
    jitter: Jitter,
}

impl std::fmt::Debug for Backoff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backoff").field("policy", &self.policy).finish_non_exhaustive()
    }
}

impl Backoff {
    pub fn new(policy: RetryPolicy) -> Self {
        Self { policy, jitter: Arc::new(pseudo_random) }
    }

    /// The same policy with a given jitter source.
    pub fn with_jitter(policy: RetryPolicy, jitter: Jitter) -> Self {
        Self { policy, jitter }
    }

    pub fn policy(&self) -> &RetryPolicy {
        &self.policy
    }

    /// The wait before retry number `retry` (0 for the first retry): a random point below
    /// `base * 2^retry`, capped at `max_delay` ("full jitter").
    pub fn delay(&self, retry: u32) -> Duration {
        let ceiling = self.policy.base_delay.saturating_mul(1u32 << retry.min(16)).min(self.policy.max_delay);
        ceiling.mul_f64((self.jitter)().clamp(0.0, 1.0))
    }
}

/// A cheap, non-cryptographic random number in `[0, 1)` (splitmix64 over time and a counter).
fn pseudo_random() -> f64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    let mut z = nanos ^ COUNTER.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap_with_jitter() {
        let policy = RetryPolicy {
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(700),
            ..RetryPolicy::default()
        };
        let full = Backoff::with_jitter(policy.clone(), Arc::new(|| 1.0));
        let delays: Vec<u128> = (0..5).map(|n| full.delay(n).as_millis()).collect();
        assert_eq!(delays, [100, 200, 400, 700, 700]);
        let half = Backoff::with_jitter(policy, Arc::new(|| 0.5));
        assert_eq!(half.delay(1), Duration::from_millis(100));
        assert_eq!(full.delay(u32::MAX), Duration::from_millis(700));
    }

    #[test]
    fn pseudo_random_stays_in_range_and_varies() {
        let samples: Vec<f64> = (0..1000).map(|_| pseudo_random()).collect();
        assert!(samples.iter().all(|x| (0.0..1.0).contains(x)));
        let distinct: std::collections::BTreeSet<u64> = samples.iter().map(|x| (x * 1e6) as u64).collect();
        assert!(distinct.len() > 900);
    }
}
