//! # fairshare-sim: the workload simulator
//!
//! Runs policies over many quanta of changing demands and measures what they do to the
//! users: seeded, reproducible demand generators ([`workload`]), the metrics the field
//! reports ([`metrics`]) and the loop that drives an [`fairshare::Allocator`] through a
//! workload ([`run`]); policies side by side for the evaluation report
//! ([`compare`]), and across every workload and alpha ([`matrix`]). Depends on the
//! core library only.

pub mod compare;
pub mod matrix;
pub mod metrics;
pub mod workload;

use fairshare::offload::Offload;
use fairshare::{Allocator, Policy, PoolConfig, Result};
pub use metrics::{Recorder, Summary};
pub use workload::Demands;

/// Runs `policy` on `config` over every quantum of `demands` and summarizes the run.
/// `on_quantum` sees each quantum's index, demands and allocations (for per-quantum
/// output and progress bars).
///
/// ```
/// use fairshare::{Alpha, PoolConfig, Policy};
/// // The first two quanta of the paper's worked example (docs/spec/karma.md).
/// let config = PoolConfig::equal(3, 2, Alpha::new(1, 2)?, 6)?;
/// let demands = vec![vec![3, 2, 1], vec![3, 0, 0]];
/// let summary = fairshare_sim::run(Policy::Karma, &config, &demands, |_, _, _| {})?;
/// assert_eq!(summary.total_alloc, vec![6, 2, 1]);
/// assert_eq!(summary.utilization, 9.0 / 12.0);
/// # Ok::<(), fairshare::Error>(())
/// ```
pub fn run(
    policy: Policy,
    config: &PoolConfig,
    demands: &Demands,
    on_quantum: impl FnMut(usize, &[u64], &Allocator),
) -> Result<Summary> {
    run_pool(&mut Offload::software(Allocator::new(config.clone(), policy)?), demands, on_quantum)
}

/// [`run`] on a pool that may be served by a device (see [`fairshare::offload`]), with
/// each quantum timed.
pub fn run_pool(
    pool: &mut Offload,
    demands: &Demands,
    on_quantum: impl FnMut(usize, &[u64], &Allocator),
) -> Result<Summary> {
    run_reported(pool, demands, demands, on_quantum)
}

/// [`run_pool`] where the users report `reported` (see [`workload::reported`]) but need
/// `demands`: the metrics count only the allocation up to the true demand.
/// `on_quantum` sees the true demands.
pub fn run_reported(
    pool: &mut Offload,
    demands: &Demands,
    reported: &Demands,
    mut on_quantum: impl FnMut(usize, &[u64], &Allocator),
) -> Result<Summary> {
    let mut recorder = Recorder::new(pool.allocator().users().len(), pool.allocator().params().capacity);
    for (q, (d, r)) in demands.iter().zip(reported).enumerate() {
        let start = std::time::Instant::now();
        pool.allocate(r)?;
        recorder.record_timed(d, pool.allocator().allocations(), start.elapsed());
        on_quantum(q, d, pool.allocator());
    }
    // The verifier's last word: the fallback, if any, is final.
    pool.settle();
    Ok(recorder.finish())
}
