//! Seeded demand generators. Every generator is a pure function of its parameters and
//! the seed (ChaCha8, stable across platforms and releases), so a run can be repeated.
//! `f` is the fair share; every result is `quanta x users` (`demands[q][u]`).
//!
//! One kind of user per generator, and [`bursty`], the mix that matches what production
//! traces show (`docs/spec/karma.md`, last section): [`Workload`] names them all.

use std::fmt;
use std::str::FromStr;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Demands by quantum, then by user: `demands[q][u]`.
pub type Demands = Vec<Vec<u64>>;

/// The kinds of user the generators are made of; demands are in units of the fair
/// share `f`.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    /// Uniform in `[lo f, hi f]` each quantum.
    Steady { lo: f64, hi: f64 },
    /// Log-normal AR(1) around `mean f`: log-scale deviation [`MODERATE_SIGMA`],
    /// correlation [`MODERATE_RHO`] from one quantum to the next.
    Moderate { mean: f64 },
    /// A two-state Markov chain: on -> off with probability `to_off`, off -> on with
    /// `to_on`; uniform in `[lo f, hi f]` when on and `[0, f/4]` when off.
    OnOff { to_off: f64, to_on: f64, lo: f64, hi: f64 },
    /// Pareto with shape 1.5 and scale `f/3` (mean `f`), capped at `40 f`.
    HeavyTailed,
}

/// The steady user of [`steady`]: `[f/2, 3f/2]`.
const CALM: Kind = Kind::Steady { lo: 0.5, hi: 1.5 };
/// The on/off user of [`on_off`]: on 40% of the time in bursts of about three quanta.
const ON_OFF: Kind = Kind::OnOff { to_off: 0.3, to_on: 0.2, lo: 1.0, hi: 4.0 };

/// Log-scale spread of the moderate user: standard deviation / mean = sqrt(e^(s^2) - 1) = 0.66.
const MODERATE_SIGMA: f64 = 0.6;
/// Quantum-to-quantum correlation of the moderate user's log demand.
const MODERATE_RHO: f64 = 0.7;

/// A standard normal draw (Box-Muller; one uniform pair per draw keeps the stream simple).
fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let u1: f64 = 1.0 - rng.gen_range(0.0..1.0f64);
    let u2: f64 = rng.gen_range(0.0..1.0f64);
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// What a user carries from one quantum to the next.
#[derive(Debug, Clone, Copy)]
struct State {
    /// The on/off user's state.
    on: bool,
    /// The moderate user's log deviation from its mean.
    x: f64,
}

impl State {
    fn new(rng: &mut ChaCha8Rng) -> Self {
        State { on: rng.gen_bool(0.4), x: MODERATE_SIGMA * normal(rng) }
    }
}

/// One user's next demand.
fn draw(kind: Kind, f: f64, state: &mut State, rng: &mut ChaCha8Rng) -> u64 {
    match kind {
        Kind::Steady { lo, hi } => rng.gen_range(lo * f..=hi * f).round() as u64,
        Kind::Moderate { mean } => {
            let rho = MODERATE_RHO;
            state.x = rho * state.x + (1.0 - rho * rho).sqrt() * MODERATE_SIGMA * normal(rng);
            (mean * f * (state.x - MODERATE_SIGMA * MODERATE_SIGMA / 2.0).exp()).round() as u64
        }
        Kind::OnOff { to_off, to_on, lo, hi } => {
            state.on = if state.on { !rng.gen_bool(to_off) } else { rng.gen_bool(to_on) };
            let (lo, hi) = if state.on { (lo * f, hi * f) } else { (0.0, f / 4.0) };
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
    let mut states: Vec<State> = kinds.iter().map(|_| State::new(&mut rng)).collect();
    (0..quanta).map(|_| kinds.iter().zip(states.iter_mut()).map(|(&k, s)| draw(k, f, s, &mut rng)).collect()).collect()
}

/// The kind of user `u` in the [`bursty`] mix: of every 20 users, 9 steady, 7 moderate,
/// 3 on/off and 1 heavy-tailed, interleaved so that any prefix of users is mixed.
fn bursty_kind(u: usize) -> Kind {
    match u % 20 {
        0 | 2 | 4 | 6 | 8 | 10 | 12 | 14 | 16 => Kind::Steady { lo: 0.9, hi: 1.6 },
        1 | 5 | 7 | 11 | 13 | 17 | 19 => Kind::Moderate { mean: 1.2 },
        3 | 9 | 15 => Kind::OnOff { to_off: 0.4, to_on: 0.03, lo: 6.0, hi: 15.0 },
        _ => Kind::HeavyTailed,
    }
}

/// The kinds of user of the [`bursty`] mix, by name, for reports: `steady`, `moderate`,
/// `on-off` or `heavy-tailed`.
pub fn bursty_kind_name(u: usize) -> &'static str {
    match bursty_kind(u) {
        Kind::Steady { .. } => "steady",
        Kind::Moderate { .. } => "moderate",
        Kind::OnOff { .. } => "on-off",
        Kind::HeavyTailed => "heavy-tailed",
    }
}

/// The mixed bursty workload of `fairshare demo`, `fairshare compare` and the benches,
/// shaped like the production traces of the Karma paper (section 2; `docs/spec/karma.md`,
/// last section): 40-70% of users with a standard deviation of at least half their
/// mean, about 20% at least their mean, and a few far beyond. The pool is contended:
/// total demand averages about 1.1 times the pool.
///
/// Of every 20 users: 9 *steady* users demand uniformly in `[0.9 f, 1.6 f]` (mean
/// `1.25 f`, standard deviation 0.16 of the mean): always about their share, so they
/// leave little slack; 7 *moderate* users follow a log-normal AR(1) process with mean
/// `1.2 f`, log-scale deviation 0.6 and correlation 0.7 from one quantum to the next
/// (standard deviation 0.66 of the mean); 3 *on/off* users idle in `[0, f/4]` and now and
/// then burst to `[6 f, 15 f]` (a Markov chain: off -> on with probability 0.03, on -> off
/// 0.4, so on 7% of the time in bursts of 2.5 quanta; mean about `0.85 f`, standard
/// deviation about 2.5 times the mean); 1 *heavy-tailed* user draws a Pareto demand
/// (shape 1.5, mean about `f`, capped at `40 f`), mostly below its share and now and then
/// 12 to 40 times its mean. So 55% of users have a standard deviation of at least half
/// their mean and 20% at least their mean. The mix was tuned so that the bursty users,
/// who are below their share most of the time, are the ones a memoryless policy fails.
pub fn bursty(users: usize, quanta: usize, fair_share: u64, seed: u64) -> Demands {
    let kinds: Vec<Kind> = (0..users).map(bursty_kind).collect();
    of_kinds(&kinds, quanta, fair_share, seed)
}

/// Every user steady: uniform in `[f/2, 3f/2]` each quantum (standard deviation about
/// 0.29 of the mean). The calm baseline where every policy does well.
pub fn steady(users: usize, quanta: usize, fair_share: u64, seed: u64) -> Demands {
    of_kinds(&vec![CALM; users], quanta, fair_share, seed)
}

/// Every user on/off: a two-state Markov chain (on -> off 0.3, off -> on 0.2, so on 40%
/// of the time), uniform in `[f, 4f]` when on and `[0, f/4]` when off. Bursts of about
/// three quanta; a standard deviation above the mean.
pub fn on_off(users: usize, quanta: usize, fair_share: u64, seed: u64) -> Demands {
    of_kinds(&vec![ON_OFF; users], quanta, fair_share, seed)
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

/// The spread of each user's demand in [`production`], as standard deviation over
/// mean: of every 20 users, 9 calm (0.2 to 0.5), 7 variable (0.5 to 1), 3 bursty (1 to
/// 12) and 1 extreme (12 to 43), each drawn log-uniformly in its range.
const PRODUCTION_SPREAD: [(f64, f64); 4] = [(0.2, 0.5), (0.5, 1.0), (1.0, 12.0), (12.0, 43.0)];

/// Which range of [`PRODUCTION_SPREAD`] user `u` draws from, interleaved like
/// [`bursty_kind`] so that any prefix of users is mixed.
fn production_class(u: usize) -> usize {
    match u % 20 {
        0 | 2 | 4 | 6 | 8 | 10 | 12 | 14 | 16 => 0,
        1 | 5 | 7 | 11 | 13 | 17 | 19 => 1,
        3 | 9 | 15 => 2,
        _ => 3,
    }
}

/// A workload with the statistics the Karma paper reports of its production traces
/// (section 2; `docs/spec/karma.md`, last section), each user with its own mean and
/// its own spread instead of a few fixed kinds: 55% of users with a standard deviation
/// of at least half their mean, 20% at least their mean, 5% at 12 to 43 times it
/// ([`PRODUCTION_SPREAD`]). Means are uniform in `[0.6 f, 1.6 f]` (the pool is
/// contended: total demand about 1.1 times it).
///
/// A user with a spread `c` below 1 follows a log-normal AR(1) process (log-scale
/// deviation `sqrt(ln(1 + c^2))`, correlation 0.7 from one quantum to the next); one
/// with `c` of 1 or more is idle or bursting (a Markov chain, on -> off 0.4, on a
/// fraction `1 / (1 + c^2)` of the time, at `mean (1 + c^2)` plus or minus 20% when on,
/// but never more than the whole pool, which is all any policy could give it), so that
/// its demand jumps from nothing to tens or hundreds of slices within a quantum.
pub fn production(users: usize, quanta: usize, fair_share: u64, seed: u64) -> Demands {
    const RHO: f64 = 0.7;
    const TO_OFF: f64 = 0.4;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let f = fair_share as f64;
    let pool = f * users as f64;
    let params: Vec<(f64, f64)> = (0..users)
        .map(|u| {
            let (lo, hi) = PRODUCTION_SPREAD[production_class(u)];
            let spread = lo * (hi / lo).powf(rng.gen_range(0.0..=1.0));
            (rng.gen_range(0.6..=1.6) * f, spread)
        })
        .collect();
    let mut x: Vec<f64> = params.iter().map(|&(_, c)| (1.0 + c * c).ln().sqrt() * normal(&mut rng)).collect();
    let mut on: Vec<bool> = params.iter().map(|&(_, c)| rng.gen_bool(1.0 / (1.0 + c * c))).collect();
    (0..quanta)
        .map(|_| {
            (0..users)
                .map(|u| {
                    let (mean, c) = params[u];
                    if c < 1.0 {
                        let sigma = (1.0 + c * c).ln().sqrt();
                        x[u] = RHO * x[u] + (1.0 - RHO * RHO).sqrt() * sigma * normal(&mut rng);
                        (mean * (x[u] - sigma * sigma / 2.0).exp()).round() as u64
                    } else {
                        let p = 1.0 / (1.0 + c * c);
                        let to_on = p * TO_OFF / (1.0 - p);
                        on[u] = if on[u] { !rng.gen_bool(TO_OFF) } else { rng.gen_bool(to_on) };
                        if on[u] {
                            (mean / p * rng.gen_range(0.8..=1.2)).min(pool).round() as u64
                        } else {
                            0
                        }
                    }
                })
                .collect()
        })
        .collect()
}

/// The Karma paper's Figure 2: three users A, B, C with fair share 2 and the five quanta
/// of demands `(3,2,1) (3,0,0) (0,3,0) (2,2,4) (2,3,5)`, repeated to `quanta` quanta.
/// Its first five quanta are the worked example of `docs/spec/karma.md`.
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
    /// [`production`].
    Production,
    /// [`figure_2`] (3 users, fair share 2, whatever the other parameters say).
    Figure2,
}

impl Workload {
    /// Every workload.
    pub const ALL: [Workload; 7] = [
        Workload::Bursty,
        Workload::Steady,
        Workload::OnOff,
        Workload::HeavyTailed,
        Workload::Diurnal,
        Workload::Production,
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
            Workload::Production => "production",
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
            Workload::Production => production(users, quanta, fair_share, seed),
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
    fn the_mix_is_shaped_like_production_traces() {
        // karma.md, last section: 40-70% of users with sd >= mean / 2, about 20% with
        // sd >= mean, a few up to 12 to 43 times their mean (here: 25x or more at peak).
        let d = bursty(100, 900, 10, 1);
        let (mut half, mut full, mut far) = (0, 0, 0);
        for u in 0..100 {
            let (mean, sd) = stats(&d, u);
            half += usize::from(sd >= mean / 2.0);
            full += usize::from(sd >= mean);
            let peak = d.iter().map(|q| q[u]).max().unwrap_or(0) as f64;
            far += usize::from(peak >= 25.0 * mean);
        }
        assert!((40..=70).contains(&half), "{half} users with sd >= mean/2");
        assert!((15..=25).contains(&full), "{full} users with sd >= mean");
        assert!((1..=10).contains(&far), "{far} users peaking at 25x their mean or more");
        for u in (0..100).filter(|&u| bursty_kind_name(u) == "moderate") {
            let (mean, sd) = stats(&d, u);
            assert!((0.45..0.9).contains(&(sd / mean)) && (mean - 12.0).abs() < 2.5, "moderate user {u}: {mean} {sd}");
        }
        let total: u64 = d.iter().flatten().sum();
        let pool = 100 * 10 * 900;
        assert!(total > pool * 9 / 10 && total < pool * 3 / 2, "total demand {total} vs pool {pool}");
    }

    /// The production workload's users, measured over a long run: the shares of users
    /// with a spread of at least a half, at least 1 and at least 12 are the paper's
    /// (`docs/spec/karma.md`); each user's mean is in its range; the pool is
    /// contended. The spreads are measured on the demands, not read from the generator.
    #[test]
    fn the_production_workload_has_the_papers_statistics() {
        let f = 10.0;
        let d = production(100, 20_000, 10, 1);
        let (mut half, mut full, mut far) = (0, 0, 0);
        for u in 0..100 {
            let (mean, sd) = stats(&d, u);
            half += usize::from(sd >= mean / 2.0);
            full += usize::from(sd >= mean);
            far += usize::from(sd >= 12.0 * mean);
            if production_class(u) < 2 {
                assert!((0.5 * f..1.7 * f).contains(&mean), "user {u}: mean {mean}");
            }
        }
        assert!((40..=70).contains(&half), "{half} users with sd >= mean/2");
        assert!((15..=25).contains(&full), "{full} users with sd >= mean");
        assert!((1..=5).contains(&far), "{far} users with sd >= 12 x mean");
        let total: u64 = d.iter().flatten().sum();
        let pool = 100 * 10 * 20_000;
        assert!(total > pool * 8 / 10 && total < pool * 3 / 2, "total demand {total} vs pool {pool}");
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
