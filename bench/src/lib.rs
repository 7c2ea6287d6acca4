//! # fairshare-bench: the benchmarks
//!
//! This crate owns the performance measurements: criterion benchmarks (`benches/`) of
//! the software policies (Karma's literal oracle against its batched threshold search,
//! batched Karma and max-min up to millions of users) and one quantum's round trip
//! through the emulated device next to the software on the same instance; and the
//! `multi_scale` binary (`cargo run --release -p fairshare-bench --bin multi_scale`),
//! which times the multi-resource policies from 100 to 10,000 users and writes
//! `bench/MULTI_SCALE.md`; and the measurements behind `fairshare bench` ([`software`],
//! [`offload`], [`serve`]: a live pool read hard, [`enforce`]: the HTB enforcer at N tenants). The library part otherwise holds the
//! helpers the benches share
//! ([`multi_instance`] for `multi_scale`, [`placed`] for the report's measured clocks),
//! so that every bench measures the same realistic instances.

pub mod multi_instance;

use fairshare::policy::karma;
use fairshare::{Alpha, Credits, KarmaParams, PoolConfig};
use fairshare_sim::workload;

pub mod enforce;
pub mod offload;
pub mod placed;
pub mod serve;
pub mod software;

/// Initial credits of every user in [`karma_instance`]: large enough that nobody runs
/// out during the warm-up quanta.
pub const INITIAL_CREDITS: i64 = 900_000;

/// Quanta run before the measured one, so that credits have drifted apart.
pub const WARM_UP_QUANTA: usize = 20;

/// A realistic Karma quantum to measure: `users` users with equal fair share
/// `fair_share`, alpha = 1/2 and [`INITIAL_CREDITS`] each, under the bursty workload
/// of [`fairshare_sim::workload::bursty`] with `seed`.
///
/// The first [`WARM_UP_QUANTA`] quanta are run through [`karma::batched`] so that the
/// credits are diverse, as in a running pool (with fresh credits every borrower would
/// tie). Returns the pool's parameters, the demand vector of the next quantum (the
/// 21st) and the credits before it: exactly the arguments of [`karma::batched`] and
/// [`karma::literal`].
///
/// # Panics
///
/// If the pool is invalid (`users == 0`, `fair_share == 0`, or a pool too large for the
/// credit range) or a warm-up quantum fails (a credit overflow).
///
/// ```
/// let (params, demand, credits) = fairshare_bench::karma_instance(1_000, 10, 42);
/// assert_eq!((params.len(), demand.len(), credits.len()), (1_000, 1_000, 1_000));
/// assert_eq!(params.capacity, 10_000);
/// assert!(credits.iter().any(|c| *c != credits[0]), "warm-up spreads the credits");
/// ```
pub fn karma_instance(users: usize, fair_share: u64, seed: u64) -> (KarmaParams, Vec<u64>, Vec<Credits>) {
    instance_of(workload::bursty(users, WARM_UP_QUANTA + 1, fair_share, seed), users, fair_share)
}

/// [`karma_instance`] for a benchmark workload at its own fair share: 20 warm-up
/// quanta of `workload`, then its 21st demand vector and the credits before it.
///
/// # Panics
///
/// As [`karma_instance`].
pub fn workload_instance(
    workload: software::BenchWorkload,
    users: usize,
    seed: u64,
) -> (KarmaParams, Vec<u64>, Vec<Credits>) {
    instance_of(workload.demands(users, WARM_UP_QUANTA + 1, seed), users, workload.fair_share())
}

fn instance_of(mut demands: Vec<Vec<u64>>, users: usize, fair_share: u64) -> (KarmaParams, Vec<u64>, Vec<Credits>) {
    let alpha = Alpha::new(1, 2).expect("alpha = 1/2 is valid");
    let config = PoolConfig::equal(users, fair_share, alpha, INITIAL_CREDITS)
        .expect("karma_instance: invalid pool (users and fair_share must be at least 1)");
    let params = KarmaParams::from_config(&config).expect("karma_instance: a validated pool has parameters");
    let demand = demands.pop().expect("a workload returns one demand vector per quantum");
    let mut credits: Vec<Credits> = config.users.iter().map(|u| u.initial_credits).collect();
    for (q, d) in demands.iter().enumerate() {
        credits = karma::batched(&params, d, &credits)
            .unwrap_or_else(|e| panic!("karma_instance: warm-up quantum {q} failed: {e}"))
            .credits;
    }
    (params, demand, credits)
}

/// [`karma_instance`] as the device takes it: 32-bit demands and whole credit
/// balances, with the pool's fair and guaranteed shares.
#[derive(Clone, Debug)]
pub struct DeviceInstance {
    /// The quantum's demands.
    pub demand: Vec<u32>,
    /// The credits before it (whole: equal shares keep credits whole).
    pub credits: Vec<u32>,
    /// Fair share `f`.
    pub fair: u32,
    /// Guaranteed share `g`.
    pub guaranteed: u32,
}

/// [`karma_instance`] for the device path (the emulator benchmark and the bench report).
///
/// ```
/// let inst = fairshare_bench::device_instance(64, 10, 42);
/// let (_, demand, credits) = fairshare_bench::karma_instance(64, 10, 42);
/// assert_eq!((inst.fair, inst.guaranteed), (10, 5));
/// assert_eq!(inst.demand, demand.iter().map(|&d| d as u32).collect::<Vec<_>>());
/// assert_eq!(i64::from(inst.credits[0]), credits[0].floor_int());
/// ```
///
/// # Panics
///
/// As [`karma_instance`], or if a credit balance is not whole (it always is with equal
/// shares).
pub fn device_instance(users: usize, fair_share: u64, seed: u64) -> DeviceInstance {
    let (params, demand, credits) = karma_instance(users, fair_share, seed);
    assert!(credits.iter().all(|c| c.is_integer()), "equal shares keep whole credits");
    DeviceInstance {
        demand: demand.iter().map(|&d| d as u32).collect(),
        credits: credits.iter().map(|c| c.floor_int() as u32).collect(),
        fair: params.fair_share[0] as u32,
        guaranteed: params.guaranteed[0] as u32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instance_has_diverse_credits_and_matches_the_oracle() {
        let (params, demand, credits) = karma_instance(1_000, 10, 1);
        assert_eq!((params.len(), demand.len(), credits.len()), (1_000, 1_000, 1_000));
        let mut distinct = credits.clone();
        distinct.sort();
        distinct.dedup();
        assert!(distinct.len() > 10, "only {} distinct credit balances", distinct.len());
        let batched = karma::batched(&params, &demand, &credits).unwrap();
        let literal = karma::literal(&params, &demand, &credits).unwrap();
        assert_eq!(batched, literal);
    }
}
