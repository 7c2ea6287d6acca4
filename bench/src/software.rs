//! The software policies, quantum by quantum, as a pool runs them: what
//! `fairshare bench software` prints and the bench report's software table.
//!
//! A run builds an equal-share pool (alpha = 1/2, [`crate::INITIAL_CREDITS`] each), runs
//! [`WARM_UP_QUANTA`](crate::WARM_UP_QUANTA) untimed quanta so that credits spread, then
//! times every one of `quanta` calls of [`Allocator::allocate`] (the steady state: the
//! allocator's buffers are reused, nothing is allocated). Demands come from a seeded
//! workload; for big pools a ring of at most [`RING_VALUES`] demand values is replayed in
//! turn, so memory stays bounded (a user's demand sequence then repeats every few quanta,
//! while credits keep moving).

use fairshare::{Allocator, Alpha, Implementation, Policy, PoolConfig};
use fairshare_sim::workload;
use serde::Serialize;
use std::fmt;
use std::str::FromStr;
use std::time::Instant;

/// The most demand values the ring holds (8 M values: 64 MB).
pub const RING_VALUES: usize = 1 << 23;

/// The workloads of the software benchmarks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BenchWorkload {
    /// [`workload::bursty`] with fair share 10: the mix of `fairshare demo`.
    Bursty,
    /// Half the users [`workload::steady`], half [`workload::on_off`] (alternating by
    /// index), fair share 100.
    SteadyOnOff,
}

impl BenchWorkload {
    /// Both, in the order tables list them.
    pub const ALL: [BenchWorkload; 2] = [BenchWorkload::Bursty, BenchWorkload::SteadyOnOff];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            BenchWorkload::Bursty => "bursty",
            BenchWorkload::SteadyOnOff => "steady-on-off",
        }
    }

    /// The fair share the workload is measured with.
    pub fn fair_share(self) -> u64 {
        match self {
            BenchWorkload::Bursty => 10,
            BenchWorkload::SteadyOnOff => 100,
        }
    }

    /// `quanta` demand vectors of `users` users.
    pub fn demands(self, users: usize, quanta: usize, seed: u64) -> workload::Demands {
        let f = self.fair_share();
        match self {
            BenchWorkload::Bursty => workload::bursty(users, quanta, f, seed),
            BenchWorkload::SteadyOnOff => {
                let steady = workload::steady(users.div_ceil(2), quanta, f, seed);
                let on_off = workload::on_off(users / 2, quanta, f, seed ^ 0x5eed);
                steady
                    .iter()
                    .zip(&on_off)
                    .map(|(s, o)| (0..users).map(|u| if u % 2 == 0 { s[u / 2] } else { o[u / 2] }).collect())
                    .collect()
            }
        }
    }
}

impl fmt::Display for BenchWorkload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for BenchWorkload {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        BenchWorkload::ALL
            .into_iter()
            .find(|w| w.name() == s)
            .ok_or_else(|| format!("unknown workload `{s}` (expected bursty or steady-on-off)"))
    }
}

/// What to measure: a pool of `users` equal shares running `policy` with
/// `implementation` on `workload` (seeded), `quanta` timed quanta.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct SoftwareRun {
    /// Users in the pool.
    pub users: usize,
    /// Timed quanta.
    pub quanta: usize,
    /// The policy.
    pub policy: Policy,
    /// The software implementation.
    pub implementation: Implementation,
    /// The workload.
    pub workload: BenchWorkload,
    /// The workload's seed.
    pub seed: u64,
}

/// What one run measured.
#[derive(Clone, Debug, Serialize)]
pub struct SoftwareReport {
    /// What ran.
    #[serde(flatten)]
    pub run: SoftwareRun,
    /// Median wall time of one quantum, in nanoseconds.
    pub median_ns: f64,
    /// 99th percentile (nearest rank) of one quantum's time, in nanoseconds.
    pub p99_ns: f64,
    /// `median_ns / users`.
    pub ns_per_user: f64,
}

/// Runs `quanta` timed quanta (after the warm-up) and reports their median and p99.
///
/// # Errors
///
/// An invalid pool (no users, or too large for the credit range) or a failed quantum.
pub fn measure(run: SoftwareRun) -> Result<SoftwareReport, fairshare::Error> {
    let SoftwareRun { users, quanta, policy, implementation, workload, seed } = run;
    let config = PoolConfig::equal(users, workload.fair_share(), Alpha::new(1, 2)?, crate::INITIAL_CREDITS)?;
    let mut pool = Allocator::new(config, policy)?.with_implementation(implementation);
    let quanta = quanta.max(1);
    let total = crate::WARM_UP_QUANTA + quanta;
    let ring = workload.demands(users, total.min((RING_VALUES / users.max(1)).max(2)), seed);
    let mut times = Vec::with_capacity(quanta);
    for q in 0..total {
        let demand = &ring[q % ring.len()];
        let start = Instant::now();
        std::hint::black_box(pool.allocate(demand)?);
        let elapsed = start.elapsed().as_nanos() as f64;
        if q >= crate::WARM_UP_QUANTA {
            times.push(elapsed);
        }
    }
    times.sort_by(f64::total_cmp);
    let median_ns = times[times.len() / 2];
    let p99_ns = times[(times.len() * 99).div_ceil(100).saturating_sub(1)];
    Ok(SoftwareReport { run, median_ns, p99_ns, ns_per_user: median_ns / users as f64 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steady_on_off_alternates_the_two_kinds() {
        let d = BenchWorkload::SteadyOnOff.demands(6, 200, 3);
        assert_eq!((d.len(), d[0].len()), (200, 6));
        // Steady users (even) demand within [f/2, 3f/2] = [50, 150] every quantum; the
        // on/off users (odd) are idle (<= f/4 = 25) in some quanta.
        assert!(d.iter().all(|q| q.iter().step_by(2).all(|&x| (50..=150).contains(&x))));
        assert!(d.iter().any(|q| q[1] <= 25));
    }

    #[test]
    fn a_run_times_every_quantum() {
        let run = SoftwareRun {
            users: 50,
            quanta: 30,
            policy: Policy::Karma,
            implementation: Implementation::Batched,
            workload: BenchWorkload::Bursty,
            seed: 1,
        };
        let r = measure(run).unwrap();
        assert_eq!((r.run.users, r.run.quanta), (50, 30));
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!((json["implementation"].as_str(), json["users"].as_u64()), (Some("batched"), Some(50)));
        assert!(r.median_ns > 0.0 && r.p99_ns >= r.median_ns);
        assert!(measure(SoftwareRun { users: 0, ..run }).is_err());
    }
}
