//! A seeded generator of multi-resource instances at cluster scale, for the
//! `multi_scale` bench (`cargo run --release -p fairshare-bench --bin multi_scale`).
//!
//! [`cluster`] builds `users` users on `servers` servers with `resources` resources
//! (CPU, memory, network, then `r4`, `r5`...), with everything issue 17's "Multi-resource
//! at cluster scale" asks of a realistic instance:
//!
//! - **Heterogeneous servers.** Three server classes (small, medium, large: 1, 2 and 4
//!   times a base of 32 CPUs, 128 GB, 10 Gb/s), each capacity jittered by up to 25%;
//!   servers sit in racks of [`RACK`] consecutive servers.
//! - **Diverse demands.** Each user's task is CPU-heavy, memory-heavy or network-heavy
//!   (one resource drawn dominant, the others a fraction of it), with amounts of about
//!   0.5-4 CPUs, 1-32 GB, 0.05-1 Gb/s, so that every resource is some users' bottleneck.
//! - **Weights** 1, 2 or 4 (about 70%, 20%, 10% of the users).
//! - **Task limits** on about half the users, from 1 to 200 tasks (log-uniform), so
//!   that users leave the filling at many different levels.
//! - **Placement constraints** on about two thirds of the users: eligible on one to
//!   three racks (drawn at random); the others may run anywhere.
//!
//! The same `(users, servers, resources, seed)` always gives the same instance (a
//! [`ChaCha8Rng`] seeded from `seed`, as the workload generators of `fairshare-sim`), and
//! every instance passes [`Instance::new`]'s range checks (the amounts are a few units each).

use fairshare_multi::instance::{InstanceSpec, ServerSpec, UserSpec};
use fairshare_multi::Instance;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Servers per rack; placement constraints name whole racks.
pub const RACK: usize = 10;

/// Base capacity of a small server per resource (CPUs, GB, Gb/s, then 100 units).
fn base_capacity(r: usize) -> f64 {
    match r {
        0 => 32.0,
        1 => 128.0,
        2 => 10.0,
        _ => 100.0,
    }
}

/// Typical per-task demand of a resource when it is the task's dominant one.
fn dominant_demand(r: usize) -> (f64, f64) {
    match r {
        0 => (1.0, 4.0),
        1 => (4.0, 32.0),
        2 => (0.3, 1.0),
        _ => (3.0, 12.0),
    }
}

/// The structure of an instance beyond its size: which users have placement
/// constraints and of what shape, which have task limits, how weights and demands are
/// spread. The policies' running time depends on it (issue 39), so the bench measures
/// each family and reports the worst.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// Two thirds of the users on 1-3 whole racks, task limits 1-200 on half, weights
    /// 1/2/4: the family of the first scale bench ([`cluster`]).
    Racks,
    /// Half the users on an arbitrary set of 2-30 servers spread over the cluster (no
    /// rack structure), task limits 1-200 on half, weights 1/2/4.
    Subsets,
    /// No placement constraints; task limits 1-200 on half, weights 1/2/4.
    Unconstrained,
    /// A task limit of 1-60 on every user, a fifth of the users on an arbitrary set of 10
    /// servers, weights 1/2/4 (the shape issue 39 reports).
    LimitedEveryone,
    /// No task limits; the rack constraints.
    Unlimited,
    /// Four users in five want mostly CPU (the other resources a fortieth to a tenth of
    /// it): one resource is nearly everyone's bottleneck; the rack constraints.
    Skewed,
    /// Weights log-uniform in 1-100; the rack constraints and limits.
    WideWeights,
}

impl Family {
    /// Every family, in report order.
    pub const ALL: [Family; 7] = [
        Family::Racks,
        Family::Subsets,
        Family::Unconstrained,
        Family::LimitedEveryone,
        Family::Unlimited,
        Family::Skewed,
        Family::WideWeights,
    ];

    /// The family's name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Family::Racks => "racks",
            Family::Subsets => "subsets",
            Family::Unconstrained => "unconstrained",
            Family::LimitedEveryone => "limited-everyone",
            Family::Unlimited => "unlimited",
            Family::Skewed => "skewed",
            Family::WideWeights => "wide-weights",
        }
    }

    /// What the family is made of.
    fn shape(self) -> Shape {
        let racks = Constraints::Racks { share: 2.0 / 3.0 };
        let half_limited = Some(Limits { share: 0.5, most: 200.0 });
        let base = Shape { constraints: racks, limits: half_limited, wide_weights: false, skewed: 0.0 };
        match self {
            Family::Racks => base,
            Family::Subsets => Shape { constraints: Constraints::Subsets { share: 0.5, fewest: 2, most: 30 }, ..base },
            Family::Unconstrained => Shape { constraints: Constraints::None, ..base },
            Family::LimitedEveryone => Shape {
                constraints: Constraints::Subsets { share: 0.2, fewest: 10, most: 10 },
                limits: Some(Limits { share: 1.0, most: 60.0 }),
                ..base
            },
            Family::Unlimited => Shape { limits: None, ..base },
            Family::Skewed => Shape { skewed: 0.8, ..base },
            Family::WideWeights => Shape { wide_weights: true, ..base },
        }
    }
}

impl std::str::FromStr for Family {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Family::ALL.into_iter().find(|f| f.name() == s).ok_or_else(|| {
            let names: Vec<&str> = Family::ALL.iter().map(|f| f.name()).collect();
            format!("unknown instance family {s:?}; expected one of {}", names.join(", "))
        })
    }
}

/// Which users may run where.
#[derive(Clone, Copy, Debug)]
enum Constraints {
    /// None: every user anywhere.
    None,
    /// A `share` of the users on 1-3 whole racks.
    Racks { share: f64 },
    /// A `share` of the users on `fewest..=most` servers drawn from the whole cluster.
    Subsets { share: f64, fewest: usize, most: usize },
}

/// A `share` of the users limited to 1..`most` tasks (log-uniform).
#[derive(Clone, Copy, Debug)]
struct Limits {
    share: f64,
    most: f64,
}

/// A family's ingredients.
#[derive(Clone, Copy, Debug)]
struct Shape {
    constraints: Constraints,
    limits: Option<Limits>,
    wide_weights: bool,
    /// Share of the users whose task is CPU with little else.
    skewed: f64,
}

/// One user's task: one resource drawn dominant, the others a fraction of theirs; a
/// skewed user's is CPU with the others a fortieth to a tenth.
fn task(rng: &mut ChaCha8Rng, resources: usize, skewed: f64) -> Vec<f64> {
    let skew = skewed > 0.0 && rng.gen_bool(skewed);
    let dominant = if skew { 0 } else { rng.gen_range(0..resources) };
    (0..resources)
        .map(|r| {
            let (lo, hi) = dominant_demand(r);
            let amount = rng.gen_range(lo..hi);
            let amount = match (r == dominant, skew) {
                (true, _) => amount,
                (false, false) => amount * rng.gen_range(0.1..0.5),
                (false, true) => amount * rng.gen_range(0.025..0.1),
            };
            // Two decimals: readable, and well inside the instance ranges.
            (amount * 100.0).round().max(1.0) / 100.0
        })
        .collect()
}

/// The servers a constrained user may run on, `None` for an unconstrained one.
fn eligible(rng: &mut ChaCha8Rng, constraints: Constraints, servers: usize) -> Option<Vec<String>> {
    let name = |i: usize| format!("s{}", i + 1);
    match constraints {
        Constraints::None => None,
        Constraints::Racks { share } => (rng.gen::<f64>() < share).then(|| {
            let racks = servers.div_ceil(RACK);
            let mut chosen = vec![false; racks];
            for _ in 0..1 + rng.gen_range(0..3) {
                chosen[rng.gen_range(0..racks)] = true;
            }
            (0..servers).filter(|&i| chosen[i / RACK]).map(name).collect()
        }),
        Constraints::Subsets { share, fewest, most } => (rng.gen::<f64>() < share).then(|| {
            let k = rng.gen_range(fewest..=most).min(servers);
            let mut picked = rand::seq::index::sample(rng, servers, k).into_vec();
            picked.sort_unstable();
            picked.into_iter().map(name).collect()
        }),
    }
}

/// The instance of `family` as JSON would state it (names `r1`.., `s1`.., `u1`..).
///
/// # Panics
///
/// If `users`, `servers` or `resources` is 0.
pub fn family_spec(family: Family, users: usize, servers: usize, resources: usize, seed: u64) -> InstanceSpec {
    assert!(users > 0 && servers > 0 && resources > 0, "family_spec: every dimension must be positive");
    let shape = family.shape();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let resource_names = (0..resources)
        .map(|r| match r {
            0 => "cpu".to_string(),
            1 => "memory".to_string(),
            2 => "network".to_string(),
            _ => format!("r{}", r + 1),
        })
        .collect();
    let server_specs: Vec<ServerSpec> = (0..servers)
        .map(|i| {
            let class = [1.0, 2.0, 4.0][rng.gen_range(0..3)];
            let capacity =
                (0..resources).map(|r| (base_capacity(r) * class * rng.gen_range(0.75..1.25)).round()).collect();
            ServerSpec { name: format!("s{}", i + 1), capacity }
        })
        .collect();
    let user_specs = (0..users)
        .map(|n| {
            let demand = task(&mut rng, resources, shape.skewed);
            let weight = if shape.wide_weights {
                100f64.powf(rng.gen::<f64>()).round().max(1.0)
            } else {
                match rng.gen::<f64>() {
                    u if u < 0.7 => 1.0,
                    u if u < 0.9 => 2.0,
                    _ => 4.0,
                }
            };
            let max_tasks = shape
                .limits
                .and_then(|l| (rng.gen::<f64>() < l.share).then(|| (l.most.powf(rng.gen::<f64>())).round().max(1.0)));
            UserSpec {
                name: format!("u{}", n + 1),
                demand,
                weight: Some(weight),
                eligible: eligible(&mut rng, shape.constraints, servers),
                entitlement: None,
                max_tasks,
            }
        })
        .collect();
    InstanceSpec { resources: resource_names, servers: server_specs, users: user_specs }
}

/// The validated instance of [`family_spec`].
///
/// # Panics
///
/// If a dimension is 0 (the generated numbers are always within the instance ranges).
pub fn family(family: Family, users: usize, servers: usize, resources: usize, seed: u64) -> Instance {
    Instance::new(family_spec(family, users, servers, resources, seed))
        .expect("generated instances are within the ranges")
}

/// The rack-shaped instance of the first scale bench: [`family_spec`] of [`Family::Racks`].
pub fn cluster_spec(users: usize, servers: usize, resources: usize, seed: u64) -> InstanceSpec {
    family_spec(Family::Racks, users, servers, resources, seed)
}

/// The validated instance of [`cluster_spec`].
///
/// # Panics
///
/// If a dimension is 0 (the generated numbers are always within the instance ranges).
pub fn cluster(users: usize, servers: usize, resources: usize, seed: u64) -> Instance {
    Instance::new(cluster_spec(users, servers, resources, seed)).expect("generated instances are within the ranges")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_instance_other_seed_other_instance() {
        assert_eq!(cluster(50, 20, 3, 7), cluster(50, 20, 3, 7));
        assert_ne!(cluster(50, 20, 3, 7), cluster(50, 20, 3, 8));
    }

    #[test]
    fn has_limits_weights_and_placement_constraints() {
        let inst = cluster(300, 100, 3, 1);
        assert_eq!((inst.n_users(), inst.n_servers(), inst.n_resources()), (300, 100, 3));
        let limited = inst.max_tasks.iter().filter(|t| t.is_some()).count();
        let constrained = inst.eligible.iter().filter(|row| row.iter().any(|&e| !e)).count();
        let weighted = inst.weight.iter().filter(|&&w| w != 1.0).count();
        // About half, two thirds and 30% of 300 users; far from 0 and from all.
        assert!((90..210).contains(&limited), "{limited} users with task limits");
        assert!((130..260).contains(&constrained), "{constrained} users with placement constraints");
        assert!((40..150).contains(&weighted), "{weighted} users with weights other than 1");
        // Each resource is the dominant share of some user (the racks family).
        let pooled = inst.pooled();
        for r in 0..3 {
            let dominated = (0..inst.n_users())
                .filter(|&n| (0..3).all(|s| inst.demand[n][r] / pooled[r] >= inst.demand[n][s] / pooled[s]))
                .count();
            assert!(dominated > 0, "resource {r} is nobody's dominant resource");
        }
    }

    /// Each family has the structure its name promises, measured on the instance:
    /// constrained users and their eligible sets, task limits, weights, skew.
    #[test]
    fn each_family_has_its_structure() {
        let (users, servers) = (400, 100);
        for fam in Family::ALL {
            let inst = family(fam, users, servers, 3, 5);
            let sets: Vec<Vec<usize>> =
                inst.eligible.iter().map(|row| (0..servers).filter(|&s| row[s]).collect()).collect();
            let constrained: Vec<&Vec<usize>> = sets.iter().filter(|s| s.len() < servers).collect();
            let whole_racks = constrained
                .iter()
                .all(|s| s.iter().all(|&i| (i / RACK * RACK..(i / RACK + 1) * RACK).all(|j| s.contains(&j))));
            let limits: Vec<f64> = inst.max_tasks.iter().flatten().copied().collect();
            let weights = &inst.weight;
            let (wmin, wmax) = weights.iter().fold((f64::MAX, 0f64), |(lo, hi), &w| (lo.min(w), hi.max(w)));
            let cpu_heavy = (0..users)
                .filter(|&n| {
                    (1..3).all(|r| inst.demand[n][r] / inst.pooled()[r] * 2.0 < inst.demand[n][0] / inst.pooled()[0])
                })
                .count();
            let share = |k: usize| k as f64 / users as f64;
            let name = fam.name();
            match fam {
                Family::Racks | Family::Unlimited | Family::Skewed | Family::WideWeights => {
                    assert!((0.55..0.78).contains(&share(constrained.len())) && whole_racks, "{name}: rack constraints")
                }
                Family::Subsets => {
                    assert!((0.4..0.6).contains(&share(constrained.len())), "{name}: half constrained");
                    assert!(!whole_racks && constrained.iter().all(|s| (2..=30).contains(&s.len())), "{name}: sets");
                }
                Family::Unconstrained => assert!(constrained.is_empty(), "{name}"),
                Family::LimitedEveryone => {
                    assert!((0.12..0.28).contains(&share(constrained.len())), "{name}: a fifth constrained");
                    assert!(constrained.iter().all(|s| s.len() == 10), "{name}: on 10 servers each");
                }
            }
            match fam {
                Family::LimitedEveryone => {
                    assert!(limits.len() == users && limits.iter().all(|&l| (1.0..=60.0).contains(&l)), "{name}")
                }
                Family::Unlimited => assert!(limits.is_empty(), "{name}"),
                _ => assert!((0.4..0.6).contains(&share(limits.len())), "{name}: half limited"),
            }
            if fam == Family::WideWeights {
                assert!(wmin == 1.0 && wmax >= 60.0, "{name}: weights {wmin}..{wmax}");
            } else {
                assert!(wmin == 1.0 && wmax == 4.0, "{name}: weights {wmin}..{wmax}");
            }
            if fam == Family::Skewed {
                assert!(share(cpu_heavy) > 0.7, "{name}: {cpu_heavy} CPU-heavy users");
            } else {
                assert!(share(cpu_heavy) < 0.45, "{name}: {cpu_heavy} CPU-heavy users");
            }
        }
        assert_eq!("limited-everyone".parse::<Family>(), Ok(Family::LimitedEveryone));
        assert!("rack".parse::<Family>().is_err_and(|e| e.contains("racks")));
    }
}
