//! The metrics the field reports for a run (Karma paper, section 5): utilization,
//! welfare per user, fairness (min / max welfare), disparity (median / min welfare),
//! Jain's index over cumulative allocations, and the time each quantum took.
//!
//! Every allocation metric counts *useful* allocation: `min(alloc, demand)` with the
//! user's true demand. A truthful user is never given more than it asks, so this only
//! matters for non-conformant users, who report more than they need (Karma paper,
//! section 5.2) and hold slices they cannot use.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// A user's useful allocation in one quantum: what it got, up to what it truly needed.
pub fn useful(alloc: u64, demand: u64) -> u128 {
    alloc.min(demand) as u128
}

/// Accumulates a run quantum by quantum. It serializes (without the per-quantum
/// times), so that a run resumed from a ledger reports what an uninterrupted one does.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Recorder {
    capacity: u64,
    quanta: u64,
    alloc: Vec<u128>,
    demand: Vec<u128>,
    allocated: u128,
    servable: u128,
    #[serde(skip)]
    nanos: Vec<u64>,
}

/// How long the quanta took (wall clock around each `allocate`, in microseconds).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct QuantumTime {
    /// Mean.
    pub mean_us: f64,
    /// Median.
    pub p50_us: f64,
    /// 99th percentile (nearest rank).
    pub p99_us: f64,
    /// Slowest.
    pub max_us: f64,
}

/// What a run did to its users.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    /// Quanta run.
    pub quanta: u64,
    /// Users in the pool.
    pub users: usize,
    /// Useful allocation / (capacity x quanta).
    pub utilization: f64,
    /// Useful allocation / sum over quanta of min(total demand, capacity): 1 means
    /// work-conserving.
    pub utilization_of_demand: f64,
    /// Per user: total useful allocation / total demand (`None` for users with no demand,
    /// who are left out of the statistics below).
    pub welfare: Vec<Option<f64>>,
    /// Lowest welfare.
    pub min_welfare: f64,
    /// Highest welfare.
    pub max_welfare: f64,
    /// min welfare / max welfare (1 is perfectly fair).
    pub fairness: f64,
    /// median welfare / min welfare (1 is perfectly fair).
    pub disparity: f64,
    /// Jain's index over cumulative allocations: (sum x)^2 / (n sum x^2).
    pub jain: f64,
    /// Total useful allocation per user.
    pub total_alloc: Vec<u128>,
    /// Total true demand per user.
    pub total_demand: Vec<u128>,
    /// Per-quantum time, when the run was timed ([`Recorder::record_timed`]).
    pub quantum_time: Option<QuantumTime>,
}

impl Summary {
    /// How unequal the users' total useful allocations are: their standard deviation
    /// over their mean, among the users who demanded anything (0 when fewer than two
    /// did, or none got anything). Karma's credits aim to make it small; welfare
    /// divides each total by the user's own demand, so the two can disagree.
    pub fn allocation_spread(&self) -> f64 {
        let xs: Vec<f64> = self.demanding().map(|(a, _)| a).collect();
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<f64>() / n;
        if xs.len() < 2 || mean <= 0.0 {
            return 0.0;
        }
        (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt() / mean
    }

    /// Pearson's correlation, across the users who demanded anything, between a
    /// user's total demand and its welfare: near -1, the users who asked for more
    /// received a smaller fraction of it (a policy equalizing totals does that); `None`
    /// with fewer than two such users or when either is the same for all of them.
    pub fn demand_welfare_correlation(&self) -> Option<f64> {
        let pairs: Vec<(f64, f64)> = self.demanding().map(|(a, d)| (d, a / d)).collect();
        let n = pairs.len() as f64;
        let (md, mw) = (pairs.iter().map(|p| p.0).sum::<f64>() / n, pairs.iter().map(|p| p.1).sum::<f64>() / n);
        let cov: f64 = pairs.iter().map(|p| (p.0 - md) * (p.1 - mw)).sum();
        let sd = pairs.iter().map(|p| (p.0 - md).powi(2)).sum::<f64>().sqrt();
        let sw = pairs.iter().map(|p| (p.1 - mw).powi(2)).sum::<f64>().sqrt();
        (pairs.len() >= 2 && sd > 0.0 && sw > 0.0).then(|| cov / (sd * sw))
    }

    /// `(total useful allocation, total demand)` of each user who demanded anything.
    fn demanding(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.total_alloc.iter().zip(&self.total_demand).filter(|(_, &d)| d > 0).map(|(&a, &d)| (a as f64, d as f64))
    }
}

impl Recorder {
    /// A recorder for `users` users sharing `capacity` slices.
    pub fn new(users: usize, capacity: u64) -> Self {
        Recorder {
            capacity,
            quanta: 0,
            alloc: vec![0; users],
            demand: vec![0; users],
            allocated: 0,
            servable: 0,
            nanos: Vec::new(),
        }
    }

    /// Adds one quantum: each user's true demand and what it was allocated.
    pub fn record(&mut self, demand: &[u64], alloc: &[u64]) {
        self.quanta += 1;
        let mut total_demand = 0u128;
        for u in 0..self.alloc.len() {
            let got = useful(alloc[u], demand[u]);
            self.alloc[u] += got;
            self.demand[u] += demand[u] as u128;
            self.allocated += got;
            total_demand += demand[u] as u128;
        }
        self.servable += total_demand.min(self.capacity as u128);
    }

    /// [`Recorder::record`], and how long the quantum took.
    pub fn record_timed(&mut self, demand: &[u64], alloc: &[u64], took: Duration) {
        self.record(demand, alloc);
        self.nanos.push(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX));
    }

    /// Total useful allocation per user so far.
    pub fn totals(&self) -> &[u128] {
        &self.alloc
    }

    /// The summary of everything recorded.
    pub fn finish(mut self) -> Summary {
        let ratio = |a: u128, b: u128| if b == 0 { 1.0 } else { a as f64 / b as f64 };
        let welfare: Vec<Option<f64>> =
            self.alloc.iter().zip(&self.demand).map(|(&a, &d)| (d > 0).then(|| ratio(a, d))).collect();
        let mut present: Vec<f64> = welfare.iter().flatten().copied().collect();
        present.sort_by(f64::total_cmp);
        let min = present.first().copied().unwrap_or(1.0);
        let max = present.last().copied().unwrap_or(1.0);
        let median = if present.is_empty() {
            1.0
        } else if present.len() % 2 == 1 {
            present[present.len() / 2]
        } else {
            (present[present.len() / 2 - 1] + present[present.len() / 2]) / 2.0
        };
        self.nanos.sort_unstable();
        let ns = &self.nanos;
        let quantum_time = (!ns.is_empty()).then(|| {
            let us = |n: u64| n as f64 / 1e3;
            let rank = |p: f64| ns[((p * ns.len() as f64).ceil() as usize).clamp(1, ns.len()) - 1];
            QuantumTime {
                mean_us: ns.iter().map(|&n| n as f64).sum::<f64>() / ns.len() as f64 / 1e3,
                p50_us: us(rank(0.5)),
                p99_us: us(rank(0.99)),
                max_us: us(ns[ns.len() - 1]),
            }
        });
        let sum: f64 = self.alloc.iter().map(|&a| a as f64).sum();
        let sum_sq: f64 = self.alloc.iter().map(|&a| (a as f64).powi(2)).sum();
        Summary {
            quanta: self.quanta,
            users: self.alloc.len(),
            utilization: ratio(self.allocated, self.capacity as u128 * self.quanta as u128),
            utilization_of_demand: ratio(self.allocated, self.servable),
            welfare,
            min_welfare: min,
            max_welfare: max,
            fairness: if max > 0.0 { min / max } else { 1.0 },
            disparity: if min > 0.0 { median / min } else { f64::INFINITY },
            jain: if sum_sq > 0.0 { sum * sum / (self.alloc.len() as f64 * sum_sq) } else { 1.0 },
            total_alloc: self.alloc,
            total_demand: self.demand,
            quantum_time,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_of_a_hand_computed_run() {
        // Two quanta, capacity 4: user 0 gets 2 of 4 demanded, user 1 gets 4 of 4,
        // user 2 asks nothing.
        let mut r = Recorder::new(3, 4);
        r.record(&[2, 2, 0], &[1, 2, 0]);
        r.record(&[2, 2, 0], &[1, 2, 0]);
        let s = r.finish();
        assert_eq!(s.welfare, vec![Some(0.5), Some(1.0), None]);
        assert_eq!((s.min_welfare, s.max_welfare, s.fairness), (0.5, 1.0, 0.5));
        assert_eq!(s.disparity, 0.75 / 0.5);
        assert_eq!(s.utilization, 6.0 / 8.0);
        assert_eq!(s.utilization_of_demand, 6.0 / 8.0);
        // Jain over totals 2, 4, 0: 36 / (3 * 20).
        assert!((s.jain - 0.6).abs() < 1e-12);
        assert_eq!(s.quantum_time, None);
    }

    #[test]
    fn over_allocation_counts_only_up_to_the_true_demand() {
        // User 0 reported 10 but needed 3: 7 slices were held, not used.
        let mut r = Recorder::new(2, 10);
        r.record(&[3, 5], &[10, 0]);
        let s = r.finish();
        assert_eq!(s.total_alloc, vec![3, 0]);
        assert_eq!(s.welfare, vec![Some(1.0), Some(0.0)]);
        assert_eq!(s.utilization, 0.3);
        assert_eq!(s.utilization_of_demand, 3.0 / 8.0);
        assert_eq!(s.disparity, f64::INFINITY);
    }

    #[test]
    fn spread_and_correlation_of_a_hand_computed_run() {
        // Totals 2, 4, 6 of demands 4, 4, 6 (welfare 0.5, 1, 1); user 3 never asks.
        let mut r = Recorder::new(4, 100);
        r.record(&[4, 4, 6, 0], &[2, 4, 6, 0]);
        let s = r.finish();
        // Mean 4, population deviation sqrt(8/3).
        assert!((s.allocation_spread() - (8.0f64 / 3.0).sqrt() / 4.0).abs() < 1e-12);
        // Demands 4, 4, 6 (mean 14/3), welfare 0.5, 1, 1 (mean 5/6): covariance sum
        // (-2/3)(-1/3) + (-2/3)(1/6) + (4/3)(1/6) = 1/3; deviations sqrt(8/3), sqrt(1/6).
        let want = (1.0 / 3.0) / ((8.0f64 / 3.0).sqrt() * (1.0f64 / 6.0).sqrt());
        let got = s.demand_welfare_correlation().expect("three users with demand");
        assert!((got - want).abs() < 1e-12, "{got} vs {want}");
        // All users equal: no spread, no correlation to speak of.
        let mut r = Recorder::new(2, 10);
        r.record(&[3, 3], &[2, 2]);
        let s = r.finish();
        assert_eq!((s.allocation_spread(), s.demand_welfare_correlation()), (0.0, None));
    }

    #[test]
    fn quantum_times_are_summarized_by_rank() {
        let mut r = Recorder::new(1, 1);
        for us in 1..=100u64 {
            r.record_timed(&[1], &[1], Duration::from_micros(us));
        }
        let t = r.finish().quantum_time.expect("timed");
        assert_eq!((t.p50_us, t.p99_us, t.max_us), (50.0, 99.0, 100.0));
        assert!((t.mean_us - 50.5).abs() < 1e-9);
    }
}
