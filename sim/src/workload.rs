//! Seeded demand generators. Every generator is a pure function of its parameters and
//! the seed (ChaCha8, stable across platforms and releases), so a run can be repeated.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Demands by quantum, then by user: `demands[q][u]`.
pub type Demands = Vec<Vec<u64>>;

/// The mixed bursty workload of `fairshare demo` and the benches.
///
/// Users are assigned round-robin to three kinds, in proportions 3 : 5 : 2:
/// *steady* users demand uniformly in `[f/2, 3f/2]`; *bursty* users follow an on/off
/// Markov chain (on -> off with probability 0.3, off -> on 0.2) and demand uniformly in
/// `[f, 4f]` when on and `[0, f/4]` when off; *heavy-tailed* users draw a Pareto demand
/// (shape 1.5, mean about `f`, capped at `40 f`). With these parameters most users have
/// a standard deviation of at least half their mean, as production traces show (Karma
/// paper, section 2). `f` is the fair share; the result is `quanta x users`.
pub fn bursty(users: usize, quanta: usize, fair_share: u64, seed: u64) -> Demands {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let f = fair_share as f64;
    let mut on: Vec<bool> = (0..users).map(|_| rng.gen_bool(0.4)).collect();
    (0..quanta)
        .map(|_| {
            (0..users)
                .map(|u| match u % 10 {
                    0..=2 => rng.gen_range(f / 2.0..=1.5 * f).round() as u64,
                    3..=7 => {
                        on[u] = if on[u] { !rng.gen_bool(0.3) } else { rng.gen_bool(0.2) };
                        let (lo, hi) = if on[u] { (f, 4.0 * f) } else { (0.0, f / 4.0) };
                        rng.gen_range(lo..=hi).round() as u64
                    }
                    _ => {
                        // Pareto(shape 1.5, scale f/3): mean = 1.5 * (f/3) / 0.5 = f.
                        let x: f64 = (f / 3.0) / rng.gen_range(f64::EPSILON..1.0f64).powf(1.0 / 1.5);
                        x.min(40.0 * f).round() as u64
                    }
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_demands_other_seed_other_demands() {
        assert_eq!(bursty(20, 50, 10, 7), bursty(20, 50, 10, 7));
        assert_ne!(bursty(20, 50, 10, 7), bursty(20, 50, 10, 8));
    }

    #[test]
    fn demands_are_bursty() {
        let d = bursty(100, 900, 10, 1);
        let mut volatile = 0;
        for u in 0..100 {
            let xs: Vec<f64> = d.iter().map(|q| q[u] as f64).collect();
            let mean = xs.iter().sum::<f64>() / xs.len() as f64;
            let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / xs.len() as f64).sqrt();
            if sd >= mean / 2.0 {
                volatile += 1;
            }
        }
        // Bursty and heavy-tailed users (70% of them) vary by at least half their mean.
        assert!((40..=80).contains(&volatile), "{volatile} volatile users");
        let total: u64 = d.iter().flatten().sum();
        let pool = 100 * 10 * 900;
        assert!(total > pool / 2 && total < 3 * pool, "total demand {total} vs pool {pool}");
    }
}
