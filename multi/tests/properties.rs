//! The property predicates of `docs/spec/psdsf_drfh.md` (A.6, B.4, Part E) on random
//! instances: small integer data with zeros and random placement constraints. Each
//! implementation is also checked against an independent one (DRF against the LP
//! filling, PS-DSF TDM against the Eisenberg-Gale program, LP (7) against C-DRFH).

use fairshare_multi::drf::drf;
use fairshare_multi::drfh::{drfh_lp, place_tasks, Fit};
use fairshare_multi::lexmaxmin::{baseline, Baseline, Filling};
use fairshare_multi::psdsf::{self, Servers, Sharing};
use fairshare_multi::{Builder, Instance};
use proptest::prelude::*;

/// Random instances: up to 5 users, 4 servers, 3 resources; integer capacities 0..=10 and
/// demands 0..=5 (zeros included), random eligibility; invalid draws are skipped.
fn instances(positive: bool, constrained: bool) -> impl Strategy<Value = Instance> {
    shaped(positive, constrained, 1..=3)
}

/// As [`instances`], with the number of resources drawn from `resources`.
fn shaped(
    positive: bool,
    constrained: bool,
    resources: std::ops::RangeInclusive<usize>,
) -> impl Strategy<Value = Instance> {
    (1usize..=5, 1usize..=4, resources).prop_flat_map(move |(n, k, m)| {
        let low = if positive { 1u32 } else { 0 };
        (
            prop::collection::vec(prop::collection::vec(low..=10u32, m), k),
            prop::collection::vec(prop::collection::vec(low..=5u32, m), n),
            prop::collection::vec(prop::collection::vec(prop::bool::weighted(0.75), k), n),
            prop::collection::vec(1u32..=3, n),
        )
            .prop_filter_map("valid instance", move |(c, d, e, w)| {
                let c: Vec<Vec<f64>> = c.iter().map(|r| r.iter().map(|&v| v as f64).collect()).collect();
                let d: Vec<Vec<f64>> = d.iter().map(|r| r.iter().map(|&v| v as f64).collect()).collect();
                let cr: Vec<&[f64]> = c.iter().map(|r| r.as_slice()).collect();
                let dr: Vec<&[f64]> = d.iter().map(|r| r.as_slice()).collect();
                let er: Vec<&[bool]> = e.iter().map(|r| r.as_slice()).collect();
                let w: Vec<f64> = w.iter().map(|&v| v as f64).collect();
                let b = Builder::new(&cr, &dr).weights(&w);
                let b = if constrained { b.eligible(&er) } else { b };
                b.build().ok()
            })
    })
}

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig { cases, ..ProptestConfig::default() }
}

proptest! {
    #![proptest_config(config(600))]

    #[test]
    fn psdsf_rdm_meets_theorem_1_sharing_incentive_and_envy_freeness(inst in instances(false, true)) {
        let a = psdsf::solve(&inst, Sharing::Rdm).expect("converges");
        let x = a.per_server.as_ref().expect("placed");
        prop_assert!(psdsf::is_psdsf_rdm(&inst, x, 1e-6), "not PS-DSF: {x:?}");
        prop_assert!(psdsf::sharing_incentive(&inst, &a.totals, 1e-6));
        prop_assert!(psdsf::envy_free(&inst, x, 1e-6));
    }

    #[test]
    fn psdsf_tdm_meets_theorem_2_and_equals_the_eisenberg_gale_program(inst in instances(false, true)) {
        let a = psdsf::solve(&inst, Sharing::Tdm).expect("converges");
        let x = a.per_server.as_ref().expect("placed");
        prop_assert!(psdsf::is_psdsf_tdm(&inst, x, 1e-6), "not PS-DSF (TDM): {x:?}");
        let eg = psdsf::tdm_convex(&inst).expect("solves");
        // The interior-point solver stops on its duality gap; the optimum is flat, so its
        // point is accurate to about 1e-5 (Theorem 2 above checks the water-filling exactly).
        for (p, q) in a.totals.iter().zip(&eg.totals) {
            prop_assert!((p - q).abs() <= 1e-4 * p.abs().max(1.0), "{:?} vs EG {:?}", a.totals, eg.totals);
        }
        let gain = psdsf::pareto_gain(&inst, &a.totals, Sharing::Tdm).expect("solves");
        prop_assert!(gain <= 1e-5 * a.totals.iter().sum::<f64>().max(1.0), "TDM is Pareto optimal; gain {gain}");
        prop_assert!(psdsf::sharing_incentive(&inst, &a.totals, 1e-6));
        prop_assert!(psdsf::envy_free(&inst, x, 1e-6));
    }

    #[test]
    fn psdsf_tdm_is_strategy_proof_for_bundle_utility(
        inst in instances(false, true),
        lie in prop::collection::vec(0u32..=5, 3),
        who in 0usize..5,
    ) {
        // PRED_SP (A.6, eq. 46): a user that reports d' gets x'[n][i] bundles of d' on each
        // server and runs min_r d'_r / d_r true tasks per bundle, counted on truly eligible
        // servers only.
        let n = who % inst.n_users();
        let mut lying = inst.clone();
        lying.demand[n] = (0..inst.n_resources()).map(|r| f64::from(lie[r])).collect();
        prop_assume!(lying.demand[n].iter().any(|&d| d > 0.0));
        prop_assume!(lying.gamma()[n].iter().any(|&g| g > 0.0));
        let truthful = psdsf::solve(&inst, Sharing::Tdm).expect("converges");
        let y = psdsf::solve(&lying, Sharing::Tdm).expect("converges");
        let gamma = inst.gamma();
        let bundles: f64 = (0..inst.n_servers())
            .filter(|&i| gamma[n][i] > 0.0)
            .map(|i| y.per_server.as_ref().expect("placed")[n][i])
            .sum();
        let per_bundle = (0..inst.n_resources())
            .filter(|&r| inst.demand[n][r] > 0.0)
            .map(|r| lying.demand[n][r] / inst.demand[n][r])
            .fold(f64::INFINITY, f64::min);
        let utility = bundles * per_bundle;
        prop_assert!(utility <= truthful.totals[n] * (1.0 + 1e-6) + 1e-9, "lying pays: {utility} > {}", truthful.totals[n]);
    }

    #[test]
    fn distributed_updates_in_any_server_order_reach_a_psdsf_allocation(
        inst in instances(false, true),
        seed in any::<u64>(),
    ) {
        let mut servers = Servers::new(&inst, Sharing::Rdm);
        let mut state = seed | 1;
        let k = inst.n_servers();
        // A fresh random permutation of the servers for each sweep (xorshift, Fisher-Yates).
        let order = |_| {
            let mut order: Vec<usize> = (0..k).collect();
            for i in (1..k).rev() {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                order.swap(i, (state % (i as u64 + 1)) as usize);
            }
            order
        };
        servers.converge(order).expect("converges");
        let a = servers.allocation();
        prop_assert!(psdsf::is_psdsf_rdm(&inst, a.per_server.as_ref().expect("placed"), 1e-6));
    }

    #[test]
    fn with_one_resource_psdsf_is_placement_aware_max_min(inst in shaped(false, true, 1..=1)) {
        // PRED_BF: with a single resource it is every user's bottleneck everywhere.
        let a = psdsf::solve(&inst, Sharing::Rdm).expect("converges");
        let scale = (0..inst.n_users()).map(|n| inst.weight[n] / inst.demand[n][0]).collect();
        let reference = Filling::new(&inst, scale).solve().expect("solves");
        for (p, q) in a.totals.iter().zip(&reference.totals) {
            prop_assert!((p - q).abs() <= 1e-5 * p.abs().max(1.0), "{:?} vs {:?}", a.totals, reference.totals);
        }
    }

    #[test]
    fn drf_filling_equals_the_lp_filling_on_the_pooled_server(
        inst in instances(false, false),
        caps in prop::collection::vec(prop::option::of(0u32..=6), 5),
    ) {
        let mut inst = inst;
        for (n, cap) in inst.max_tasks.iter_mut().enumerate() {
            *cap = caps[n].map(f64::from);
        }
        let a = drf(&inst);
        let pooled = vec![inst.pooled()];
        let filling = Filling {
            capacity: &pooled,
            demand: &inst.demand,
            allowed: vec![vec![true]; inst.n_users()],
            scale: (0..inst.n_users()).map(|n| inst.weight[n] / inst.task_share(n)).collect(),
            cap: inst.max_tasks.clone(),
        };
        let reference = filling.solve().expect("solves");
        for (p, q) in a.totals.iter().zip(&reference.totals) {
            prop_assert!((p - q).abs() <= 1e-6 * p.abs().max(1.0), "DRF {:?} vs LP {:?}", a.totals, reference.totals);
        }
        // Weighted sharing incentive: a dominant share of at least phi_n / sum phi, or the cap.
        let sum_w: f64 = inst.weight.iter().sum();
        for n in 0..inst.n_users() {
            let capped = inst.max_tasks[n].is_some_and(|c| a.totals[n] >= c - 1e-9);
            prop_assert!(capped || a.totals[n] * inst.task_share(n) >= inst.weight[n] / sum_w - 1e-9);
        }
    }

    #[test]
    fn drfh_lp_equals_c_drfh_and_is_envy_free_pareto_optimal_and_monotone(inst in instances(true, false)) {
        let mut inst = inst;
        inst.weight.iter_mut().for_each(|w| *w = 1.0);
        let (g, a) = drfh_lp(&inst).expect("solves");
        let lex = baseline(&inst, Baseline::CDrfh).expect("solves");
        for (p, q) in a.totals.iter().zip(&lex.totals) {
            prop_assert!((p - q).abs() <= 1e-5 * p.abs().max(1.0), "LP (7) {:?} vs C-DRFH {:?}", a.totals, lex.totals);
        }
        let x = a.per_server.as_ref().expect("placed");
        prop_assert!(psdsf::envy_free(&inst, x, 1e-6));
        let gain = psdsf::pareto_gain(&inst, &a.totals, Sharing::Rdm).expect("solves");
        prop_assert!(gain <= 1e-5 * a.totals.iter().sum::<f64>().max(1.0), "Pareto gain {gain}");
        if inst.n_users() > 1 {
            for leave in 0..inst.n_users() {
                let keep: Vec<usize> = (0..inst.n_users()).filter(|&n| n != leave).collect();
                let (g2, _) = drfh_lp(&inst.subset(&keep)).expect("solves");
                prop_assert!(g2 >= g * (1.0 - 1e-6), "population monotonicity: {g2} < {g}");
            }
        }
        if inst.n_servers() == 1 {
            // A single server is DRF.
            for (p, q) in a.totals.iter().zip(&drf(&inst).totals) {
                prop_assert!((p - q).abs() <= 1e-5 * p.abs().max(1.0));
            }
        }
    }

    #[test]
    fn drfh_lp_with_task_limits_equals_c_drfh(
        inst in instances(true, false),
        caps in prop::collection::vec(prop::option::of(0u32..=6), 5),
    ) {
        // The limits' levels are bisected (`drfh_lp`); C-DRFH raises users one level at
        // a time: the same totals, with limits of 0, on every user or on none, and weights.
        let mut inst = inst;
        for (n, cap) in inst.max_tasks.iter_mut().enumerate() {
            *cap = caps[n].map(f64::from);
        }
        let (_, a) = drfh_lp(&inst).expect("solves");
        let lex = baseline(&inst, Baseline::CDrfh).expect("solves");
        for (p, q) in a.totals.iter().zip(&lex.totals) {
            prop_assert!((p - q).abs() <= 1e-5 * p.abs().max(1.0), "LP (7) {:?} vs C-DRFH {:?}", a.totals, lex.totals);
        }
        for (n, &t) in a.totals.iter().enumerate() {
            prop_assert!(inst.max_tasks[n].is_none_or(|c| t <= c * (1.0 + 1e-6) + 1e-9), "user {n} over its limit");
        }
    }

    #[test]
    fn drfh_is_truthful(inst in instances(true, false), lie in prop::collection::vec(1u32..=5, 3)) {
        let mut inst = inst;
        inst.weight.iter_mut().for_each(|w| *w = 1.0);
        let (_, truthful) = drfh_lp(&inst).expect("solves");
        let mut lying = inst.clone();
        lying.demand[0] = (0..inst.n_resources()).map(|r| f64::from(lie[r])).collect();
        let (_, a) = drfh_lp(&lying).expect("solves");
        let per_task = (0..inst.n_resources())
            .map(|r| lying.demand[0][r] / inst.demand[0][r])
            .fold(f64::INFINITY, f64::min);
        let true_tasks = a.totals[0] * per_task;
        prop_assert!(true_tasks <= truthful.totals[0] * (1.0 + 1e-5) + 1e-7, "lying pays: {true_tasks} > {}", truthful.totals[0]);
    }

    #[test]
    fn task_placement_is_feasible_and_maximal(inst in instances(false, true), limit in 1u32..=8) {
        let mut inst = inst;
        inst.max_tasks.iter_mut().for_each(|t| *t = Some(f64::from(limit)));
        for fit in [Fit::First, Fit::Best] {
            let a = place_tasks(&inst, fit).expect("places");
            let x = a.per_server.as_ref().expect("placed");
            prop_assert!(psdsf::feasible_rdm(&inst, x, 1e-9), "{fit:?} overcommits");
            for n in 0..inst.n_users() {
                prop_assert!(x[n].iter().all(|&t| t == t.floor()), "whole tasks");
                if a.totals[n] < f64::from(limit) {
                    // Pending tasks: none fits on any eligible server.
                    for i in (0..inst.n_servers()).filter(|&i| inst.eligible[n][i]) {
                        let fits = (0..inst.n_resources()).all(|r| {
                            let used = inst.usage(x, i, r);
                            used + inst.demand[n][r] <= inst.capacity[i][r] + 1e-9
                        });
                        prop_assert!(!fits, "{fit:?}: user {n} still fits on server {i}");
                    }
                }
            }
        }
    }

    #[test]
    fn baselines_are_feasible_and_respect_placement(inst in instances(false, true)) {
        for which in [Baseline::CDrfh, Baseline::Tsf, Baseline::Cdrf] {
            let a = baseline(&inst, which).expect("solves");
            prop_assert!(psdsf::feasible_rdm(&inst, a.per_server.as_ref().expect("placed"), 1e-6), "{which:?}");
        }
    }
}
