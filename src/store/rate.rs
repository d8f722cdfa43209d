//! The providers' request and token budgets in Postgres (`rate_schedules`), so that every
//! replica books on one schedule per key: see [`crate::ratelimit`] for the model. One statement
//! per booking, correction or hold; the database's clock is the only one that counts.

use std::time::Duration;

use crate::ratelimit::{BudgetFuture, Reservation, SharedBudget};
use crate::store::Store;

/// The longest a schedule may be moved or held in one go.
const MAX_SECONDS: f64 = 86_400.0;

impl SharedBudget for Store {
    fn reserve<'a>(&'a self, reservations: &'a [Reservation], after: Duration) -> BudgetFuture<'a, Duration> {
        Box::pin(async move {
            let keys: Vec<&str> = reservations.iter().map(|r| r.key.as_str()).collect();
            let costs: Vec<f64> =
                reservations.iter().map(|r| r.cost.as_secs_f64().min(MAX_SECONDS)).collect();
            let wait = sqlx::query_scalar!(
                r#"SELECT agentd_rate_reserve($1, $2, $3) AS "wait!""#,
                &keys as &[&str],
                &costs,
                after.as_secs_f64().min(MAX_SECONDS),
            )
            .fetch_one(&self.pool)
            .await
            .map_err(|e| e.to_string())?;
            Ok(Duration::from_secs_f64(wait.clamp(0.0, MAX_SECONDS)))
        })
    }

    fn adjust<'a>(&'a self, key: &'a str, seconds: f64) -> BudgetFuture<'a, ()> {
        Box::pin(async move {
            let seconds = seconds.clamp(-MAX_SECONDS, MAX_SECONDS);
            sqlx::query!(
                "UPDATE rate_schedules SET next_at = next_at + make_interval(secs => $2) WHERE key = $1",
                key,
                seconds
            )
            .execute(&self.pool)
            .await
            .map_err(|e| e.to_string())?;
            Ok(())
        })
    }

    fn hold<'a>(&'a self, key: &'a str, wait: Duration) -> BudgetFuture<'a, ()> {
        Box::pin(async move {
            sqlx::query!(
                r#"INSERT INTO rate_schedules AS s (key, next_at)
                   VALUES ($1, clock_timestamp() + make_interval(secs => $2))
                   ON CONFLICT (key) DO UPDATE SET next_at = greatest(s.next_at, excluded.next_at)"#,
                key,
                wait.as_secs_f64().min(MAX_SECONDS)
            )
            .execute(&self.pool)
            .await
            .map_err(|e| e.to_string())?;
            Ok(())
        })
    }
}
