//! Policies x workloads x alpha in one table, the question a user brings: for demands
//! like mine, which policy is fairest, and at which alpha? What `fairshare compare
//! --matrix` prints. Every cell is one run of [`crate::compare`] on the software
//! allocator, so a cell equals the same run made alone.

use fairshare::offload::Offload;
use fairshare::{Allocator, Result};
use serde::Serialize;

use crate::compare::{compare, Setup};
use crate::workload::Workload;

/// The workloads of the matrix: every built-in one except `figure-2`, which has its
/// own three users and fair share.
pub fn workloads() -> Vec<Workload> {
    Workload::ALL.into_iter().filter(|&w| w != Workload::Figure2).collect()
}

/// One policy at one alpha on one workload.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cell {
    /// The workload's name.
    pub workload: &'static str,
    /// The policy's name.
    pub policy: &'static str,
    /// Karma's alpha; `None` where it does not apply.
    pub alpha: Option<f64>,
    /// Useful allocation / pool.
    pub utilization: f64,
    /// Worst / best welfare.
    pub fairness: f64,
    /// Median / worst welfare (`None` when the worst is 0).
    pub disparity: Option<f64>,
    /// Jain's index of the users' total allocations.
    pub jain: f64,
    /// Worst welfare.
    pub min_welfare: f64,
    /// Standard deviation / mean of the users' total allocations
    /// ([`crate::Summary::allocation_spread`]).
    pub allocation_spread: f64,
    /// Correlation of total demand and welfare across users
    /// ([`crate::Summary::demand_welfare_correlation`]).
    pub demand_welfare_correlation: Option<f64>,
}

/// Runs `setup`'s policies and alphas on each of `workloads` (its own `workload` and
/// `conformance` are ignored), cells in workload order, then [`Setup::variants`]
/// order. `tick` is called once per quantum run.
pub fn matrix(setup: &Setup, workloads: &[Workload], mut tick: impl FnMut()) -> Result<Vec<Cell>> {
    let mut cells = Vec::new();
    for &workload in workloads {
        let setup = Setup { workload, conformance: false, ..setup.clone() };
        let software = |_: &&str, config: &fairshare::PoolConfig, policy| {
            Allocator::new(config.clone(), policy).map(Offload::software)
        };
        let c = compare(&setup, &["software"], software, &mut tick)?;
        cells.extend(c.runs.into_iter().map(|r| {
            let s = &r.summary;
            Cell {
                workload: workload.name(),
                policy: r.policy,
                alpha: r.alpha,
                utilization: s.utilization,
                fairness: s.fairness,
                disparity: s.disparity.is_finite().then_some(s.disparity),
                jain: s.jain,
                min_welfare: s.min_welfare,
                allocation_spread: s.allocation_spread(),
                demand_welfare_correlation: s.demand_welfare_correlation(),
            }
        }));
    }
    Ok(cells)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairshare::{Alpha, Policy, PoolConfig};

    fn setup() -> Setup {
        Setup {
            users: 12,
            quanta: 60,
            fair_share: 10,
            alphas: vec![Alpha::new(1, 2).expect("alpha"), Alpha::ZERO],
            initial_credits: 1_000,
            seed: 7,
            workload: Workload::Bursty,
            policies: vec![Policy::Karma, Policy::MaxMin, Policy::Strict],
            conformance: true,
        }
    }

    /// Every cell is the run made alone: the same workload, policy and alpha through
    /// `crate::run`, its metrics equal; one cell per workload and variant, in order.
    #[test]
    fn each_cell_is_the_run_made_alone() {
        let s = setup();
        let mut ticks = 0;
        let workloads = workloads();
        assert_eq!(workloads.len(), Workload::ALL.len() - 1);
        let cells = matrix(&s, &workloads, || ticks += 1).expect("matrix");
        assert_eq!(cells.len(), workloads.len() * 4);
        assert_eq!(ticks, workloads.len() * 4 * s.quanta);
        for (i, cell) in cells.iter().enumerate() {
            let workload = workloads[i / 4];
            let (policy, alpha) = s.variants()[i % 4];
            assert_eq!(
                (cell.workload, cell.policy, cell.alpha),
                (workload.name(), policy.name(), alpha.map(Alpha::to_f64))
            );
            let config = PoolConfig::equal(s.users, s.fair_share, alpha.unwrap_or(Alpha::ZERO), s.initial_credits)
                .expect("config");
            let demands = workload.generate(s.users, s.quanta, s.fair_share, s.seed);
            let alone = crate::run(policy, &config, &demands, |_, _, _| {}).expect("run");
            assert_eq!(cell.fairness, alone.fairness, "{cell:?}");
            assert_eq!(cell.jain, alone.jain, "{cell:?}");
            assert_eq!(cell.utilization, alone.utilization, "{cell:?}");
            assert_eq!(cell.allocation_spread, alone.allocation_spread(), "{cell:?}");
        }
    }
}
