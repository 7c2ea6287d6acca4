//! Policies side by side on one workload: the evaluation behind `fairshare compare`.
//!
//! Every policy runs on the same demands (and, with several backends, on each backend),
//! Karma once per alpha. Then the conformance experiment of the Karma paper (section
//! 5.2): half the users, drawn with the seed, report `max(demand, f)` instead of their
//! demand, and their welfare is compared with what they get by reporting truthfully, the
//! others' demands unchanged. The results carry what the report needs: the summary per
//! run, per-quantum totals, cumulative allocations of up to [`MAX_TRACKED_USERS`] users
//! over time, and the conformance welfare per policy.

use std::fmt::Display;

use fairshare::offload::{Fallback, Offload};
use fairshare::{Alpha, Policy, PoolConfig};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::metrics::{useful, Summary};
use crate::workload::{self, Strategy, Workload};

/// Users whose cumulative allocation is kept per quantum (evenly spaced over the pool).
pub const MAX_TRACKED_USERS: usize = 100;

/// Points kept per cumulative-allocation curve (quanta are sampled evenly beyond it).
pub const MAX_CURVE_POINTS: usize = 150;

/// Mixed into the seed to draw the non-conformant half, so that it does not follow the
/// workload's own random stream.
const NON_CONFORMANT_STREAM: u64 = 0x006e_6f6e_636f_6e66;

/// What to compare.
#[derive(Clone, Debug)]
pub struct Setup {
    /// Users in the pool (ignored by [`Workload::Figure2`], which has 3).
    pub users: usize,
    /// Quanta to run.
    pub quanta: usize,
    /// Fair share of every user (ignored by [`Workload::Figure2`], which has 2).
    pub fair_share: u64,
    /// Karma's alphas. The first is the one the conformance experiment and the
    /// per-user results use.
    pub alphas: Vec<Alpha>,
    /// Initial credits of every user.
    pub initial_credits: i64,
    /// Workload seed (also draws the non-conformant half).
    pub seed: u64,
    /// The demand generator.
    pub workload: Workload,
    /// The policies, in report order.
    pub policies: Vec<Policy>,
    /// Whether to run the conformance experiment.
    pub conformance: bool,
}

impl Setup {
    /// The users and fair share the workload really has.
    pub fn shape(&self) -> (usize, u64) {
        match self.workload {
            Workload::Figure2 => (3, 2),
            _ => (self.users, self.fair_share),
        }
    }

    /// The (policy, alpha) pairs that run: Karma once per alpha, the others once
    /// (`None`: alpha does not apply).
    pub fn variants(&self) -> Vec<(Policy, Option<Alpha>)> {
        let mut out = Vec::new();
        for &p in &self.policies {
            match p {
                Policy::Karma => out.extend(self.alphas.iter().map(|&a| (p, Some(a)))),
                _ => out.push((p, None)),
            }
        }
        out
    }

    /// Quanta run in all, for a progress bar: every variant on every backend, and the
    /// conformance experiment once per policy.
    pub fn steps(&self, backends: usize) -> u64 {
        let conformance = if self.conformance { self.policies.len() } else { 0 };
        ((self.variants().len() * backends + conformance) * self.quanta) as u64
    }

    /// The pool for one variant. Max-min and strict ignore alpha; their pools get 0.
    fn config(&self, alpha: Option<Alpha>) -> fairshare::Result<PoolConfig> {
        let (users, f) = self.shape();
        PoolConfig::equal(users, f, alpha.unwrap_or(Alpha::ZERO), self.initial_credits)
    }
}

/// One policy (at one alpha) on one backend.
#[derive(Clone, Debug)]
pub struct Run {
    /// The policy's name.
    pub policy: &'static str,
    /// Karma's alpha; `None` where it does not apply.
    pub alpha: Option<f64>,
    /// The backend's name.
    pub backend: String,
    /// The metrics.
    pub summary: Summary,
    /// When and why the backend's device was dropped for software, if it was.
    pub fallback: Option<Fallback>,
    /// Per quantum: total true demand and total useful allocation.
    pub per_quantum: Vec<(u128, u128)>,
    /// Cumulative useful allocation of each tracked user ([`Comparison::tracked`]) at
    /// each quantum of [`Comparison::curve_quanta`].
    pub curves: Vec<Vec<u128>>,
}

/// The conformance experiment for one policy.
#[derive(Clone, Debug, Serialize)]
pub struct Conformance {
    /// The policy's name.
    pub policy: &'static str,
    /// Karma's alpha; `None` where it does not apply.
    pub alpha: Option<f64>,
    /// Mean welfare of the non-conformant half while it reports `max(demand, f)`.
    pub welfare_non_conformant: f64,
    /// Mean welfare of the same users when everyone reports truthfully.
    pub welfare_conformant: f64,
    /// Mean welfare of the other half while the first half lies.
    pub others_welfare_when_lied_to: f64,
    /// Mean welfare of the other half when everyone is truthful.
    pub others_welfare_truthful: f64,
}

/// Everything `fairshare compare` reports.
#[derive(Clone, Debug)]
pub struct Comparison {
    /// What ran.
    pub setup: Setup,
    /// Every run, backends in the order given, variants in [`Setup::variants`] order.
    pub runs: Vec<Run>,
    /// One per policy, at the first alpha, in policy order (none when the setup says so).
    pub conformance: Vec<Conformance>,
    /// Users in the conformance experiment's non-conformant half, ascending.
    pub non_conformant: Vec<usize>,
    /// The users whose curves are kept.
    pub tracked: Vec<usize>,
    /// The quanta (1-based, ascending, ending with the last) at which curves are kept.
    pub curve_quanta: Vec<usize>,
    /// Whether every backend gave the same totals as the first for every variant.
    pub backends_agree: bool,
}

/// Runs the comparison. `make_pool` builds a pool on a backend; `tick` is called once
/// per quantum run (for a progress bar).
pub fn compare<B: Display, E: From<fairshare::Error>>(
    setup: &Setup,
    backends: &[B],
    mut make_pool: impl FnMut(&B, &PoolConfig, Policy) -> Result<Offload, E>,
    mut tick: impl FnMut(),
) -> Result<Comparison, E> {
    let (users, f) = setup.shape();
    let demands = setup.workload.generate(users, setup.quanta, f, setup.seed);
    let tracked: Vec<usize> = if users <= MAX_TRACKED_USERS {
        (0..users).collect()
    } else {
        (0..MAX_TRACKED_USERS).map(|i| i * users / MAX_TRACKED_USERS).collect()
    };
    let stride = setup.quanta.div_ceil(MAX_CURVE_POINTS).max(1);
    let curve_quanta: Vec<usize> = (1..=setup.quanta).filter(|q| q % stride == 0 || *q == setup.quanta).collect();

    // The conformance experiment's non-conformant half and what it reports.
    let mut rng = ChaCha8Rng::seed_from_u64(setup.seed ^ NON_CONFORMANT_STREAM);
    let mut order: Vec<usize> = (0..users).collect();
    order.shuffle(&mut rng);
    let mut non_conformant = order[..users / 2].to_vec();
    non_conformant.sort_unstable();
    let mut strategies = vec![Strategy::Conformant; users];
    for &u in &non_conformant {
        strategies[u] = Strategy::NonConformant;
    }
    let reported = workload::reported(&demands, &strategies, f);
    // Mean welfare of the liars (or of the others).
    let mean = |w: &[Option<f64>], liars: bool| {
        let xs: Vec<f64> =
            (0..users).filter(|u| (strategies[*u] == Strategy::NonConformant) == liars).filter_map(|u| w[u]).collect();
        if xs.is_empty() {
            1.0
        } else {
            xs.iter().sum::<f64>() / xs.len() as f64
        }
    };

    let mut runs = Vec::new();
    let mut conformance = Vec::new();
    for (b, backend) in backends.iter().enumerate() {
        for (policy, alpha) in setup.variants() {
            let config = setup.config(alpha)?;
            let mut pool = make_pool(backend, &config, policy)?;
            let mut per_quantum = Vec::with_capacity(setup.quanta);
            let mut cumulative = vec![0u128; tracked.len()];
            let mut curves = Vec::with_capacity(curve_quanta.len());
            let summary = crate::run_pool(&mut pool, &demands, |q, d, pool| {
                let alloc = pool.allocations();
                let total = (0..d.len()).map(|u| useful(alloc[u], d[u])).sum();
                per_quantum.push((d.iter().map(|&x| x as u128).sum(), total));
                for (c, &u) in cumulative.iter_mut().zip(&tracked) {
                    *c += useful(alloc[u], d[u]);
                }
                if (q + 1) % stride == 0 || q + 1 == setup.quanta {
                    curves.push(cumulative.clone());
                }
                tick();
            })?;
            // On the first backend, the same pool again with the half lying.
            let primary = alpha.is_none() || alpha == setup.alphas.first().copied();
            if setup.conformance && b == 0 && primary {
                let mut liars = make_pool(backend, &config, policy)?;
                let lied = crate::run_reported(&mut liars, &demands, &reported, |_, _, _| tick())?.welfare;
                conformance.push(Conformance {
                    policy: policy.name(),
                    alpha: alpha.map(Alpha::to_f64),
                    welfare_non_conformant: mean(&lied, true),
                    welfare_conformant: mean(&summary.welfare, true),
                    others_welfare_when_lied_to: mean(&lied, false),
                    others_welfare_truthful: mean(&summary.welfare, false),
                });
            }
            runs.push(Run {
                policy: policy.name(),
                alpha: alpha.map(Alpha::to_f64),
                backend: backend.to_string(),
                summary,
                fallback: pool.fallback().cloned(),
                per_quantum,
                curves,
            });
        }
    }
    let variants = setup.variants().len();
    let backends_agree = runs
        .iter()
        .enumerate()
        .skip(variants)
        .all(|(i, r)| r.summary.total_alloc == runs[i % variants].summary.total_alloc);
    Ok(Comparison { setup: setup.clone(), runs, conformance, non_conformant, tracked, curve_quanta, backends_agree })
}
