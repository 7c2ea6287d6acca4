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

/// The instance as JSON would state it (names `r1`.., `s1`.., `u1`..).
///
/// # Panics
///
/// If `users`, `servers` or `resources` is 0.
pub fn cluster_spec(users: usize, servers: usize, resources: usize, seed: u64) -> InstanceSpec {
    assert!(users > 0 && servers > 0 && resources > 0, "cluster_spec: every dimension must be positive");
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
    let racks = servers.div_ceil(RACK);
    let user_specs = (0..users)
        .map(|n| {
            let dominant = rng.gen_range(0..resources);
            let demand = (0..resources)
                .map(|r| {
                    let (lo, hi) = dominant_demand(r);
                    let amount = rng.gen_range(lo..hi);
                    let amount = if r == dominant { amount } else { amount * rng.gen_range(0.1..0.5) };
                    // Two decimals: readable, and well inside the instance ranges.
                    (amount * 100.0).round().max(1.0) / 100.0
                })
                .collect();
            let weight = match rng.gen::<f64>() {
                u if u < 0.7 => 1.0,
                u if u < 0.9 => 2.0,
                _ => 4.0,
            };
            let max_tasks = (rng.gen::<f64>() < 0.5).then(|| (200f64.powf(rng.gen::<f64>())).round().max(1.0));
            let eligible = (rng.gen::<f64>() < 2.0 / 3.0).then(|| {
                let mut chosen = vec![false; racks];
                for _ in 0..1 + rng.gen_range(0..3) {
                    chosen[rng.gen_range(0..racks)] = true;
                }
                (0..servers).filter(|&i| chosen[i / RACK]).map(|i| format!("s{}", i + 1)).collect()
            });
            UserSpec {
                name: format!("u{}", n + 1),
                demand,
                weight: Some(weight),
                eligible,
                entitlement: None,
                max_tasks,
            }
        })
        .collect();
    InstanceSpec { resources: resource_names, servers: server_specs, users: user_specs }
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
        // Each resource is the dominant share of some user.
        let pooled = inst.pooled();
        for r in 0..3 {
            let dominated = (0..inst.n_users())
                .filter(|&n| (0..3).all(|s| inst.demand[n][r] / pooled[r] >= inst.demand[n][s] / pooled[s]))
                .count();
            assert!(dominated > 0, "resource {r} is nobody's dominant resource");
        }
    }
}
