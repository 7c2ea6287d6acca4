//! The lexicographic filling behind C-DRFH, TSF and CDRF ([`Filling::solve`]: one
//! program per distinct level, users frozen by their duals, programs solved by column
//! generation; issue 17) against the procedure it replaced ([`Filling::solve_reference`],
//! one program per user and round, every placement in every program) on random
//! instances with task limits, weights and placement constraints: the same levels.

use fairshare_multi::lexmaxmin::{Baseline, Filling};
use fairshare_multi::{Builder, Instance};
use proptest::prelude::*;

/// The instance of integer capacities `c`, demands `d`, eligibility `e`, weights `w`
/// and task limits `t`, if valid.
fn build(c: &[Vec<u32>], d: &[Vec<u32>], e: &[Vec<bool>], w: &[u32], t: &[Option<u32>]) -> Option<Instance> {
    let real =
        |m: &[Vec<u32>]| -> Vec<Vec<f64>> { m.iter().map(|r| r.iter().map(|&v| f64::from(v)).collect()).collect() };
    let (c, d) = (real(c), real(d));
    let cr: Vec<&[f64]> = c.iter().map(|r| r.as_slice()).collect();
    let dr: Vec<&[f64]> = d.iter().map(|r| r.as_slice()).collect();
    let er: Vec<&[bool]> = e.iter().map(|r| r.as_slice()).collect();
    let w: Vec<f64> = w.iter().map(|&v| f64::from(v)).collect();
    let mut inst = Builder::new(&cr, &dr).weights(&w).eligible(&er).build().ok()?;
    inst.max_tasks = t.iter().map(|t| t.map(f64::from)).collect();
    Some(inst)
}

/// Up to 6 users, 4 servers, 3 resources; integer data with zeros, random eligibility,
/// weights 1..=3 and task limits 0..=6 on some users; invalid draws are skipped.
fn instances() -> impl Strategy<Value = Instance> {
    (1usize..=6, 1usize..=4, 1usize..=3).prop_flat_map(|(n, k, m)| {
        (
            prop::collection::vec(prop::collection::vec(0u32..=10, m), k),
            prop::collection::vec(prop::collection::vec(0u32..=5, m), n),
            prop::collection::vec(prop::collection::vec(prop::bool::weighted(0.75), k), n),
            prop::collection::vec(1u32..=3, n),
            prop::collection::vec(prop::option::of(0u32..=6), n),
        )
            .prop_filter_map("valid instance", |(c, d, e, w, t)| build(&c, &d, &e, &w, &t))
    })
}

/// Larger instances, where each user has more servers than the two that column
/// generation starts from: 8 to 14 users, 6 to 10 servers in racks of 2 (a user is
/// eligible on all of them or on one to three racks), 2 or 3 resources.
fn racked() -> impl Strategy<Value = Instance> {
    (8usize..=14, 3usize..=5, 2usize..=3).prop_flat_map(|(n, racks, m)| {
        let k = 2 * racks;
        (
            prop::collection::vec(prop::collection::vec(1u32..=12, m), k),
            prop::collection::vec(prop::collection::vec(0u32..=5, m), n),
            prop::collection::vec(prop::option::of(prop::collection::vec(prop::bool::weighted(0.4), racks)), n),
            prop::collection::vec(1u32..=4, n),
            prop::collection::vec(prop::option::of(1u32..=8), n),
        )
            .prop_filter_map("valid instance", move |(c, d, e, w, t)| {
                let e: Vec<Vec<bool>> = e
                    .iter()
                    .map(|racks_of| (0..k).map(|i| racks_of.as_ref().is_none_or(|on| on[i / 2])).collect())
                    .collect();
                build(&c, &d, &e, &w, &t)
            })
    })
}

/// The new filling's totals equal the reference's, and its allocation is feasible.
fn same_as_reference(inst: &Instance, which: usize) -> Result<(), TestCaseError> {
    // The scales of the three baselines: C-DRFH, TSF and CDRF.
    let scale = [Baseline::CDrfh, Baseline::Tsf, Baseline::Cdrf][which].scale(inst);
    prop_assume!(scale.iter().all(|s| s.is_finite() && *s > 0.0));
    let filling = Filling::new(inst, scale);
    let (Ok(new), Ok(old)) = (filling.solve(), filling.solve_reference()) else {
        // Small integer data: both program sequences solve.
        panic!("solver failed");
    };
    for (p, q) in new.totals.iter().zip(&old.totals) {
        prop_assert!(
            (p - q).abs() <= 1e-6 * p.abs().max(q.abs()).max(1.0),
            "new {:?} vs reference {:?}",
            new.totals,
            old.totals
        );
    }
    // And the new one is feasible: limits and capacities.
    let x = new.per_server.as_ref().expect("placed");
    for n in 0..inst.n_users() {
        if let Some(t) = inst.max_tasks[n] {
            prop_assert!(new.totals[n] <= t * (1.0 + 1e-6) + 1e-9, "user {n} over its limit {t}: {}", new.totals[n]);
        }
        for i in 0..inst.n_servers() {
            prop_assert!(inst.eligible[n][i] || x[n][i] <= 1e-9);
        }
    }
    for i in 0..inst.n_servers() {
        for r in 0..inst.n_resources() {
            prop_assert!(inst.usage(x, i, r) <= inst.capacity[i][r] * (1.0 + 1e-6) + 1e-9);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn batched_filling_equals_the_reference_on_racked_instances(inst in racked(), which in 0usize..3) {
        same_as_reference(&inst, which)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn batched_filling_equals_the_reference(inst in instances(), which in 0usize..3) {
        same_as_reference(&inst, which)?;
    }
}
