//! The metrics the field reports for a run (Karma paper, section 5): utilization,
//! welfare per user, fairness (min / max welfare), disparity (median / min welfare) and
//! Jain's index over cumulative allocations.

use serde::Serialize;

/// Accumulates a run quantum by quantum.
#[derive(Clone, Debug)]
pub struct Recorder {
    capacity: u64,
    quanta: u64,
    alloc: Vec<u128>,
    demand: Vec<u128>,
    allocated: u128,
    servable: u128,
}

/// What a run did to its users.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    /// Quanta run.
    pub quanta: u64,
    /// Users in the pool.
    pub users: usize,
    /// Allocated / (capacity x quanta).
    pub utilization: f64,
    /// Allocated / sum over quanta of min(total demand, capacity): 1 means work-conserving.
    pub utilization_of_demand: f64,
    /// Per user: total allocation / total demand (users with no demand are left out).
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
    /// Total allocation per user.
    pub total_alloc: Vec<u128>,
}

impl Recorder {
    /// A recorder for `users` users sharing `capacity` slices.
    pub fn new(users: usize, capacity: u64) -> Self {
        Recorder { capacity, quanta: 0, alloc: vec![0; users], demand: vec![0; users], allocated: 0, servable: 0 }
    }

    /// Adds one quantum.
    pub fn record(&mut self, demand: &[u64], alloc: &[u64]) {
        self.quanta += 1;
        let mut total_demand = 0u128;
        for u in 0..self.alloc.len() {
            self.alloc[u] += alloc[u] as u128;
            self.demand[u] += demand[u] as u128;
            self.allocated += alloc[u] as u128;
            total_demand += demand[u] as u128;
        }
        self.servable += total_demand.min(self.capacity as u128);
    }

    /// The summary of everything recorded.
    pub fn finish(self) -> Summary {
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
    }
}
