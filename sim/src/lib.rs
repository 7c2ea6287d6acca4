//! # fairshare-sim: the workload simulator
//!
//! Runs policies over many quanta of changing demands and measures what they do to the
//! users: seeded, reproducible demand generators ([`workload`]), the metrics the field
//! reports ([`metrics`]) and the loop that drives an [`fairshare::Allocator`] through a
//! workload ([`run`]). The device emulator will live here as well (it serves the
//! register map of `driver/` from the hardware model or the software model).

pub mod metrics;
pub mod workload;

use fairshare::{Allocator, Policy, PoolConfig, Result};
pub use metrics::{Recorder, Summary};
pub use workload::Demands;

/// Runs `policy` on `config` over every quantum of `demands` and summarizes the run.
/// `on_quantum` sees each quantum's index, demands and allocations (for per-quantum
/// output and progress bars).
///
/// ```
/// use fairshare::{Alpha, PoolConfig, Policy};
/// // The first two quanta of the paper's worked example (shared/spec/karma.md).
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
    mut on_quantum: impl FnMut(usize, &[u64], &Allocator),
) -> Result<Summary> {
    let mut pool = Allocator::new(config.clone(), policy)?;
    let mut recorder = Recorder::new(config.users.len(), pool.params().capacity);
    for (q, d) in demands.iter().enumerate() {
        pool.allocate(d)?;
        recorder.record(d, pool.allocations());
        on_quantum(q, d, &pool);
    }
    Ok(recorder.finish())
}
