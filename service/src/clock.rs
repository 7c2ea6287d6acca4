//! The wall clock: one quantum per tick, on a thread of its own (never behind a reader
//! on the HTTP runtime), with its own deadline arithmetic.
//!
//! Ticks are at `start + k x period`, k = 1, 2, ... After waking (or after a quantum),
//! the clock runs the quantum of the latest tick that has passed, `k = floor((now -
//! start) / period)`; the ticks between the previous quantum's and this one passed with
//! no quantum and are counted missed. So over any run, quanta + missed = ticks passed,
//! exactly (a quantum that fails counts as neither, and is logged by the pool); a
//! quantum late by less than a period is run (late), and its lateness is in
//! `fairshare_tick_lateness_seconds`. A quantum never overlaps the next.

use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::pool::SharedPool;
use crate::publish::Published;

/// Which tick `now` is in: the number of whole periods since `start`.
pub fn tick_of(start: Instant, now: Instant, period: Duration) -> u64 {
    let elapsed = now.saturating_duration_since(start).as_nanos();
    u64::try_from(elapsed / period.as_nanos().max(1)).unwrap_or(u64::MAX)
}

/// The instant of tick `k`.
pub fn instant_of(start: Instant, k: u64, period: Duration) -> Instant {
    let nanos = period.as_nanos().saturating_mul(u128::from(k));
    start + Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
}

/// Runs quanta of `pool` every `period` until `stop` receives (or its sender goes).
pub fn run(pool: SharedPool, published: Arc<Published>, period: Duration, stop: Receiver<()>) {
    let start = Instant::now();
    let mut last = 0u64;
    loop {
        let due = instant_of(start, last + 1, period);
        let now = Instant::now();
        if due > now {
            match stop.recv_timeout(due - now) {
                Err(RecvTimeoutError::Timeout) => {}
                Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
            }
        } else if !matches!(stop.try_recv(), Err(std::sync::mpsc::TryRecvError::Empty)) {
            return;
        }
        let woke = Instant::now();
        let k = tick_of(start, woke, period).max(last + 1);
        if k > last + 1 {
            published.metrics.missed(k - last - 1);
        }
        published.metrics.late(woke.saturating_duration_since(instant_of(start, k, period)));
        last = k;
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| pool.lock().tick()));
        let result = match ran {
            Ok(result) => result,
            Err(panic) => {
                // A bug: the pool may be half way through a quantum. No more quanta run;
                // the status says why (`/healthz` answers 503) until an operator restarts.
                let what = panic
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| panic.downcast_ref::<&str>().copied())
                    .unwrap_or("a panic")
                    .to_string();
                eprintln!("fairshare serve: a quantum panicked ({what}); the clock stops");
                published.update_status(|s| s.clock_error = Some(format!("a quantum panicked: {what}")));
                return;
            }
        };
        if let Err(e) = result {
            published.metrics.missed(1);
            // Commit failures are logged by the pool when they start and end; a replica
            // deposed meanwhile says so once.
            if !matches!(e, crate::ServiceError::NotCommitted { .. } | crate::ServiceError::Replica(_)) {
                eprintln!("fairshare serve: quantum failed: {e}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_counted_from_the_start() {
        let start = Instant::now();
        let p = Duration::from_millis(20);
        assert_eq!(tick_of(start, start, p), 0);
        assert_eq!(tick_of(start, start + Duration::from_millis(39), p), 1);
        assert_eq!(tick_of(start, start + Duration::from_millis(40), p), 2);
        assert_eq!(instant_of(start, 3, p), start + Duration::from_millis(60));
        assert_eq!(tick_of(start, start - Duration::from_millis(1), p), 0, "before the start");
    }
}
