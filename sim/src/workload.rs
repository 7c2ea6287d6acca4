//! Seeded demand generators. Every generator is a pure function of its parameters and
//! the seed (ChaCha8, stable across platforms and releases), so a run can be repeated.
//! `f` is the fair share; every result is `quanta x users` (`demands[q][u]`).
//!
//! One kind of user per generator, and [`bursty`], the mix that matches what production
//! traces show (`shared/spec/karma.md`, last section): [`Workload`] names them all.

use std::fmt;
use std::str::FromStr;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Demands by quantum, then by user: `demands[q][u]`.
pub type Demands = Vec<Vec<u64>>;

/// The kinds of user the generators are made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Steady,
    OnOff,
    HeavyTailed,
}

/// One user's next demand; `on` is the on/off user's state.
fn draw(kind: Kind, f: f64, on: &mut bool, rng: &mut ChaCha8Rng) -> u64 {
    match kind {
        Kind::Steady => rng.gen_range(f / 2.0..=1.5 * f).round() as u64,
        Kind::OnOff => {
            *on = if *on { !rng.gen_bool(0.3) } else { rng.gen_bool(0.2) };
            let (lo, hi) = if *on { (f, 4.0 * f) } else { (0.0, f / 4.0) };
            rng.gen_range(lo..=hi).round() as u64
        }
        Kind::HeavyTailed => {
            // Pareto(shape 1.5, scale f/3): mean = 1.5 * (f/3) / 0.5 = f.
            let x: f64 = (f / 3.0) / rng.gen_range(f64::EPSILON..1.0f64).powf(1.0 / 1.5);
            x.min(40.0 * f).round() as u64
        }
    }
}

/// Users of the given kinds, every quantum drawn in user order.
fn of_kinds(kinds: &[Kind], quanta: usize, fair_share: u64, seed: u64) -> Demands {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let f = fair_share as f64;
    let mut on: Vec<bool> = kinds.iter().map(|_| rng.gen_bool(0.4)).collect();
    (0..quanta).map(|_| kinds.iter().zip(on.iter_mut()).map(|(&k, on)| draw(k, f, on, &mut rng)).collect()).collect()
}

/// The mixed bursty workload of `fairshare demo` and the benches.
///
/// Users are assigned round-robin to three kinds, in proportions 3 : 5 : 2:
/// *steady* users demand uniformly in `[f/2, 3f/2]`; *on/off* users follow a Markov
/// chain (on -> off with probability 0.3, off -> on 0.2) and demand uniformly in
/// `[f, 4f]` when on and `[0, f/4]` when off; *heavy-tailed* users draw a Pareto demand
/// (shape 1.5, mean about `f`, capped at `40 f`). With these parameters most users have
/// a standard deviation of at least half their mean, as production traces show (Karma
/// paper, section 2).
pub fn bursty(users: usize, quanta: usize, fair_share: u64, seed: u64) -> Demands {
    let kinds: Vec<Kind> = (0..users)
        .map(|u| match u % 10 {
            0..=2 => Kind::Steady,
            3..=7 => Kind::OnOff,
            _ => Kind::HeavyTailed,
        })
        .collect();
    of_kinds(&kinds, quanta, fair_share, seed)
}

/// Every user steady: uniform in `[f/2, 3f/2]` each quantum (standard deviation about
/// 0.29 of the mean). The calm baseline where every policy does well.
pub fn steady(users: usize, quanta: usize, fair_share: u64, seed: u64) -> Demands {
    of_kinds(&vec![Kind::Steady; users], quanta, fair_share, seed)
}

/// Every user on/off: a two-state Markov chain (on -> off 0.3, off -> on 0.2, so on 40%
/// of the time), uniform in `[f, 4f]` when on and `[0, f/4]` when off. Bursts of about
/// three quanta; a standard deviation above the mean.
pub fn on_off(users: usize, quanta: usize, fair_share: u64, seed: u64) -> Demands {
    of_kinds(&vec![Kind::OnOff; users], quanta, fair_share, seed)
}

/// Every user heavy-tailed: Pareto with shape 1.5 and scale `f/3` (mean `f`), capped at
/// `40 f`: mostly below the fair share, now and then dozens of times it, like the few
/// users of the production traces that swing 12 to 43 times their mean.
pub fn heavy_tailed(users: usize, quanta: usize, fair_share: u64, seed: u64) -> Demands {
    of_kinds(&vec![Kind::HeavyTailed; users], quanta, fair_share, seed)
}

/// Period of [`diurnal`], in quanta: one "day".
pub const DAY: usize = 96;

/// Diurnal users: demand follows a day of [`DAY`] quanta,
/// `f (1 + 0.8 sin(2 pi q / DAY + phase_u))` plus uniform noise in `[-f/4, f/4]`, never
/// below 0. Each user's phase is drawn once, uniform over the day, so peaks are spread
/// out and the total stays near the pool while each user swings.
pub fn diurnal(users: usize, quanta: usize, fair_share: u64, seed: u64) -> Demands {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let f = fair_share as f64;
    let phase: Vec<f64> = (0..users).map(|_| rng.gen_range(0.0..std::f64::consts::TAU)).collect();
    (0..quanta)
        .map(|q| {
            let angle = std::f64::consts::TAU * q as f64 / DAY as f64;
            phase
                .iter()
                .map(|p| {
                    let level = f * (1.0 + 0.8 * (angle + p).sin()) + rng.gen_range(-f / 4.0..=f / 4.0);
                    level.max(0.0).round() as u64
                })
                .collect()
        })
        .collect()
}

/// The Karma paper's Figure 2: three users A, B, C with fair share 2 and the five quanta
/// of demands `(3,2,1) (3,0,0) (0,3,0) (2,2,4) (2,3,5)`, repeated to `quanta` quanta.
/// Its first five quanta are the worked example of `shared/spec/karma.md`.
pub fn figure_2(quanta: usize) -> Demands {
    const FIVE: [[u64; 3]; 5] = [[3, 2, 1], [3, 0, 0], [0, 3, 0], [2, 2, 4], [2, 3, 5]];
    (0..quanta).map(|q| FIVE[q % 5].to_vec()).collect()
}

/// The named workloads of `fairshare compare --workload`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// [`bursty`].
    Bursty,
    /// [`steady`].
    Steady,
    /// [`on_off`].
    OnOff,
    /// [`heavy_tailed`].
    HeavyTailed,
    /// [`diurnal`].
    Diurnal,
    /// [`figure_2`] (3 users, fair share 2, whatever the other parameters say).
    Figure2,
}

impl Workload {
    /// Every workload.
    pub const ALL: [Workload; 6] = [
        Workload::Bursty,
        Workload::Steady,
        Workload::OnOff,
        Workload::HeavyTailed,
        Workload::Diurnal,
        Workload::Figure2,
    ];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Bursty => "bursty",
            Workload::Steady => "steady",
            Workload::OnOff => "on-off",
            Workload::HeavyTailed => "heavy-tailed",
            Workload::Diurnal => "diurnal",
            Workload::Figure2 => "figure-2",
        }
    }

    /// The demands of this workload.
    pub fn generate(self, users: usize, quanta: usize, fair_share: u64, seed: u64) -> Demands {
        match self {
            Workload::Bursty => bursty(users, quanta, fair_share, seed),
            Workload::Steady => steady(users, quanta, fair_share, seed),
            Workload::OnOff => on_off(users, quanta, fair_share, seed),
            Workload::HeavyTailed => heavy_tailed(users, quanta, fair_share, seed),
            Workload::Diurnal => diurnal(users, quanta, fair_share, seed),
            Workload::Figure2 => figure_2(quanta),
        }
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Workload {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Workload::ALL.into_iter().find(|w| w.name() == s).ok_or_else(|| {
            let names: Vec<&str> = Workload::ALL.iter().map(|w| w.name()).collect();
            format!("unknown workload {s:?}; expected one of {}", names.join(", "))
        })
    }
}

/// What a user reports to the allocator (Karma paper, section 5.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// Reports its true demand.
    Conformant,
    /// Reports `max(demand, f)`: never less than its fair share, so it holds slices it
    /// does not use.
    NonConformant,
}

/// The demands as reported when user `u` follows `strategies[u]` (users beyond the slice
/// are conformant).
pub fn reported(demands: &Demands, strategies: &[Strategy], fair_share: u64) -> Demands {
    demands
        .iter()
        .map(|q| {
            q.iter()
                .enumerate()
                .map(|(u, &d)| match strategies.get(u) {
                    Some(Strategy::NonConformant) => d.max(fair_share),
                    _ => d,
                })
                .collect()
        })
        .collect()
}

/// Writes demands as a trace in the CSV format of `fairshare replay`
/// (`quantum,user,demand`, quanta from 1, users named by `names`).
pub fn write_trace(out: &mut dyn std::io::Write, demands: &Demands, names: &[String]) -> std::io::Result<()> {
    writeln!(out, "quantum,user,demand")?;
    for (q, row) in demands.iter().enumerate() {
        for (name, d) in names.iter().zip(row) {
            writeln!(out, "{},{name},{d}", q + 1)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(d: &Demands, u: usize) -> (f64, f64) {
        let xs: Vec<f64> = d.iter().map(|q| q[u] as f64).collect();
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / xs.len() as f64).sqrt();
        (mean, sd)
    }

    #[test]
    fn same_seed_same_demands_other_seed_other_demands() {
        for w in Workload::ALL {
            assert_eq!(w.generate(20, 50, 10, 7), w.generate(20, 50, 10, 7), "{w}");
            if w != Workload::Figure2 {
                assert_ne!(w.generate(20, 50, 10, 7), w.generate(20, 50, 10, 8), "{w}");
            }
        }
    }

    #[test]
    fn the_mix_is_bursty() {
        // karma.md: 40-70% of users with sd >= mean / 2 in production traces. (About 20%
        // there have sd >= mean; here the on/off and heavy-tailed 70% do: calibrating
        // that is part of the evaluation issue.)
        let d = bursty(100, 900, 10, 1);
        let mut half = 0;
        for u in 0..100 {
            let (mean, sd) = stats(&d, u);
            half += usize::from(sd >= mean / 2.0);
        }
        assert!((40..=80).contains(&half), "{half} users with sd >= mean/2");
        let total: u64 = d.iter().flatten().sum();
        let pool = 100 * 10 * 900;
        assert!(total > pool / 2 && total < 3 * pool, "total demand {total} vs pool {pool}");
    }

    #[test]
    fn each_kind_has_its_shape() {
        let f = 10.0;
        let steady = steady(30, 600, 10, 3);
        let on_off = on_off(30, 600, 10, 3);
        let heavy = heavy_tailed(30, 600, 10, 3);
        let diurnal = diurnal(30, 600, 10, 3);
        for u in 0..30 {
            let (m, sd) = stats(&steady, u);
            assert!((m - f).abs() < 1.0 && sd < 0.4 * m, "steady user {u}: {m} {sd}");
            let (m, sd) = stats(&on_off, u);
            assert!(sd > 0.9 * m, "on/off user {u}: {m} {sd}");
            let (m, _) = stats(&diurnal, u);
            assert!((m - f).abs() < 1.5, "diurnal user {u}: mean {m}");
        }
        let peak = heavy.iter().flatten().max().copied().unwrap_or(0);
        assert!((100..=400).contains(&peak), "heavy tail reaches 10x f, capped at 40x: {peak}");
        // Diurnal: one user's demand a quarter day apart from its peak is lower.
        let (mut hi, mut lo) = (0u64, u64::MAX);
        for q in 0..DAY {
            hi = hi.max(diurnal[q][0]);
            lo = lo.min(diurnal[q][0]);
        }
        assert!(hi >= 16 && lo <= 4, "diurnal swing {lo}..{hi}");
    }

    #[test]
    fn figure_2_repeats_the_worked_example() {
        let d = figure_2(7);
        assert_eq!(d[0], [3, 2, 1]);
        assert_eq!(d[4], [2, 3, 5]);
        assert_eq!(d[5], d[0]);
    }

    #[test]
    fn non_conformant_users_report_at_least_the_fair_share() {
        let d = vec![vec![0, 15, 3], vec![12, 2, 0]];
        let r = reported(&d, &[Strategy::NonConformant, Strategy::Conformant, Strategy::NonConformant], 10);
        assert_eq!(r, vec![vec![10, 15, 10], vec![12, 2, 10]]);
    }

    #[test]
    fn traces_are_written_in_the_replay_format() {
        let mut out = Vec::new();
        write_trace(&mut out, &vec![vec![1, 2], vec![3, 4]], &["a".into(), "b".into()]).expect("in memory");
        assert_eq!(String::from_utf8(out).expect("utf-8"), "quantum,user,demand\n1,a,1\n1,b,2\n2,a,3\n2,b,4\n");
    }
}
