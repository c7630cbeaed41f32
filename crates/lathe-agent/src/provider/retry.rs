//! When and how long to wait before sending a request again.
//!
//! Only failures before the first byte of the response body are retried (see
//! `http::retrying`): once output has started, a new request would make the model
//! generate again, so the error is reported instead.

use std::time::Duration;

/// Backoff for transient failures (connection reset, 502/503/504/429).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt. By default, 3.
    pub retries: u32,
    /// Wait before the first retry; doubled for each next one. By default, 500 ms.
    pub initial_delay: Duration,
    /// Upper bound for one wait of the backoff. By default, 4 s.
    pub max_delay: Duration,
    /// Upper bound for a wait the server asked for with `Retry-After` (which is honoured up to
    /// it, even when it is longer than `max_delay`). By default, 30 s.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            retries: 3,
            initial_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(4),
            max_retry_after: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// No retries at all.
    pub fn none() -> Self {
        RetryPolicy {
            retries: 0,
            ..RetryPolicy::default()
        }
    }

    /// `retries` retries without waiting (for tests).
    pub fn immediate(retries: u32) -> Self {
        RetryPolicy {
            retries,
            initial_delay: Duration::ZERO,
            max_delay: Duration::ZERO,
            max_retry_after: Duration::ZERO,
        }
    }

    /// The wait before retry number `retry` (1-based), honouring the server's `Retry-After`
    /// within `max_retry_after`.
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(after) = retry_after {
            return after.min(self.max_retry_after);
        }
        let factor = 1u32
            .checked_shl(retry.saturating_sub(1))
            .unwrap_or(u32::MAX);
        self.initial_delay
            .saturating_mul(factor)
            .min(self.max_delay)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_up_to_the_cap() {
        let p = RetryPolicy::default();
        assert_eq!(p.delay(1, None), Duration::from_millis(500));
        assert_eq!(p.delay(2, None), Duration::from_millis(1000));
        assert_eq!(p.delay(3, None), Duration::from_millis(2000));
        assert_eq!(p.delay(4, None), Duration::from_secs(4));
        assert_eq!(p.delay(60, None), Duration::from_secs(4));
    }

    #[test]
    fn retry_after_is_honoured_within_the_cap() {
        let p = RetryPolicy::default();
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(1))),
            Duration::from_secs(1)
        );
        // Longer than the backoff's cap: the server knows when it will be back.
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(10))),
            Duration::from_secs(10)
        );
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(600))),
            Duration::from_secs(30)
        );
        assert_eq!(RetryPolicy::immediate(2).delay(2, None), Duration::ZERO);
    }
}
