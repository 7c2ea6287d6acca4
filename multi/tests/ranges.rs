//! No silent nonsense from huge numbers: every number of an instance
//! has a documented range (`fairshare_multi::instance`, module doc), a number outside it
//! is refused with an error naming the user or server, the field and the value, and
//! within the ranges no policy silently answers a user with 0 tasks.

use std::cell::Cell;

use fairshare_multi::drfh::drfh_lp;
use fairshare_multi::instance::{CAPACITY_SPREAD, DEMAND_SPREAD, TASKS_PER_SERVER, TASK_SIZE, WEIGHT_SPREAD};
use fairshare_multi::{run, Builder, Instance, MultiError, MultiPolicy};
use proptest::prelude::*;
use proptest::test_runner::TestRunner;

/// Two resources, one server `s1` with `capacity`, one user `ann` with `ann` (JSON members
/// after the name) and one user `bob` asking for one of each.
fn two_users(capacity: &str, ann: &str) -> String {
    format!(
        r#"{{"resources": ["cpu", "mem"],
            "servers": [{{"name": "s1", "capacity": [{capacity}]}}],
            "users": [{{"name": "ann", {ann}}}, {{"name": "bob", "demand": [1, 1]}}]}}"#
    )
}

fn refused(json: &str) -> String {
    match Instance::from_json(json) {
        Err(MultiError::Invalid(message)) => message,
        other => panic!("expected an invalid instance, got {other:?}"),
    }
}

#[test]
fn huge_weights_are_refused_with_the_field_and_value() {
    // Accepted before: drf and psdsf then gave bob 4e-307 tasks (0 as printed), exit 0.
    let message = refused(&two_users("4, 4", r#""demand": [1, 1], "weight": 1e307"#));
    assert_eq!(message, r#"user "ann": weight 1e307 is outside [1e-6, 1e6]"#);
    let message = refused(&two_users("4, 4", r#""demand": [1, 1], "weight": 1e-9"#));
    assert_eq!(message, r#"user "ann": weight 1e-9 is outside [1e-6, 1e6]"#);
}

#[test]
fn huge_demands_are_refused_with_the_field_and_value() {
    let message = refused(&two_users("4, 4", r#""demand": [1e300, 1]"#));
    assert_eq!(message, r#"user "ann": demand[cpu] 1e300 is outside [1e-6, 1e9] (or 0)"#);
    let message = refused(&two_users("4, 4", r#""demand": [1, 1e-7]"#));
    assert_eq!(message, r#"user "ann": demand[mem] 1e-7 is outside [1e-6, 1e9] (or 0)"#);
}

#[test]
fn tiny_capacities_are_refused_with_the_field_and_value() {
    let message = refused(&two_users("1e-300, 4", r#""demand": [1, 1]"#));
    assert_eq!(message, r#"server "s1": capacity[cpu] 1e-300 is outside [1e-6, 1e9] (or 0)"#);
    let message = refused(&two_users("4, 2e9", r#""demand": [1, 1]"#));
    assert_eq!(message, r#"server "s1": capacity[mem] 2e9 is outside [1e-6, 1e9] (or 0)"#);
}

#[test]
fn task_limits_and_entitlements_are_refused_outside_their_ranges() {
    let message = refused(&two_users("4, 4", r#""demand": [1, 1], "max_tasks": 1e16"#));
    assert_eq!(message, r#"user "ann": max_tasks 1e16 is outside [1e-6, 1e15] (or 0)"#);
    let message = refused(&two_users("4, 4", r#""demand": [1, 1], "entitlement": 1e-8"#));
    assert_eq!(message, r#"user "ann": entitlement 1e-8 is outside [1e-6, 1e6] (or 0)"#);
    // Zeros keep their meaning.
    let inst = Instance::from_json(&two_users("4, 4", r#""demand": [1, 0], "max_tasks": 0, "entitlement": 0"#));
    assert!(inst.is_ok(), "{inst:?}");
}

#[test]
fn non_finite_and_negative_numbers_are_refused_with_the_field() {
    // JSON cannot write NaN or infinity, and a literal beyond f64 is a parse error.
    for json in [two_users("4, 4", r#""demand": [1, NaN]"#), two_users("1e400, 4", r#""demand": [1, 1]"#)] {
        assert!(matches!(Instance::from_json(&json), Err(MultiError::Parse { .. })), "{json}");
    }
    let message = refused(&two_users("4, 4", r#""demand": [1, -2]"#));
    assert_eq!(message, r#"user "ann": demand[mem] = -2 is negative"#);
    // The Builder can pass any f64.
    let build = |c: f64, d: f64, w: f64, t: f64| match Builder::new(&[&[c, 4.0]], &[&[d, 1.0], &[1.0, 1.0]])
        .weights(&[w, 1.0])
        .max_tasks(&[t, 1.0])
        .build()
    {
        Err(MultiError::Invalid(message)) => message,
        other => panic!("expected an invalid instance, got {other:?}"),
    };
    assert_eq!(build(f64::INFINITY, 1.0, 1.0, 1.0), r#"server "s1": capacity[r1] = inf is not a finite number"#);
    assert_eq!(build(4.0, f64::NAN, 1.0, 1.0), r#"user "u1": demand[r1] = NaN is not a finite number"#);
    assert_eq!(build(4.0, 1.0, f64::NEG_INFINITY, 1.0), r#"user "u1": weight = -inf is not a finite number"#);
    assert_eq!(build(4.0, 1.0, 1.0, -1e300), r#"user "u1": max_tasks = -1e300 is negative"#);
}

#[test]
fn ratios_beyond_the_tolerance_are_refused_naming_both_ends() {
    // Each weight is in range, but they are 1e5 apart.
    let json =
        two_users("4, 4", r#""demand": [1, 1], "weight": 1e-3"#).replace(r#"[1, 1]}]"#, r#"[1, 1], "weight": 100}]"#);
    assert_eq!(
        refused(&json),
        r#"weights range from 0.001 (user "ann") to 100 (user "bob"), a ratio of 1e5 above 1e4: values this far apart are not resolved at the solvers' tolerance"#
    );
    // Demands of one resource 1e7 apart.
    let json = two_users("4, 4", r#""demand": [1e-6, 1]"#).replace(r#"[1, 1]}]"#, r#"[10, 1]}]"#);
    let message = refused(&json);
    assert!(
        message.starts_with(
            r#"demands of "cpu" range from 1e-6 (user "ann") to 10 (user "bob"), a ratio of 1e7 above 1e6"#
        ),
        "{message}"
    );
    // Capacities of one resource 1e7 apart.
    let json = two_users("10, 4", r#""demand": [1, 1]"#)
        .replace(r#"[10, 4]}]"#, r#"[10, 4]}, {"name": "s2", "capacity": [1e-6, 4]}]"#);
    let message = refused(&json);
    assert!(
        message.starts_with(r#"capacities of "cpu" range from 1e-6 (server "s2") to 10 (server "s1"), a ratio of 1e7"#),
        "{message}"
    );
    // A capacity of 1e9 next to a task of 0.1: 1e10 tasks on one server.
    assert_eq!(
        refused(&two_users("1e9, 4", r#""demand": [0.1, 1]"#)),
        r#"server "s1": capacity[cpu] 1e9 is more than 1e9 times user "ann"'s demand[cpu] 0.1: over 1e9 tasks on one server are not resolved"#
    );
    // One task needing more than 1e3 times a server.
    assert_eq!(
        refused(&two_users("4, 4", r#""demand": [5000, 1]"#)),
        r#"user "ann": demand[cpu] 5000 is more than 1e3 times server "s1"'s capacity[cpu] 4: a task that large next to a server that small is not resolved"#
    );
    // Weights within 1e4 and demands within 1e6, but weighted sizes 1e10 apart: ann could
    // run 1e9 tasks alone at weight 100, bob 1e3 at weight 0.01.
    let json = r#"{"resources": ["cpu"], "servers": [{"name": "s1", "capacity": [1e9]}],
        "users": [{"name": "ann", "demand": [1], "weight": 100}, {"name": "bob", "demand": [1e6], "weight": 0.01}]}"#;
    let message = refused(json);
    assert!(
        message.starts_with(
            r#"the users' weighted sizes (weight times tasks on the pooled servers alone) range from 10 (user "bob") to 1e11 (user "ann"), a ratio of 1e10 above 1e9"#
        ),
        "{message}"
    );
    // Across resources the units differ: no ratio is bounded.
    assert!(Instance::from_json(&two_users("1e9, 1e-3", r#""demand": [1e3, 1e-3]"#)).is_ok());
    // Entitlements, as given (before they are normalized).
    let json = two_users("4, 4", r#""demand": [1, 1], "entitlement": 1e-6"#)
        .replace(r#"[1, 1]}]"#, r#"[1, 1], "entitlement": 1}]"#);
    assert!(refused(&json).starts_with(r#"entitlements range from 1e-6 (user "ann") to 1 (user "bob")"#));
}

#[test]
fn the_bounds_themselves_are_accepted_and_every_policy_answers() {
    // On the bounds: 1e9 tasks per server (the CLI's "tiny tasks" case), capacities and
    // demands 1e6 apart, a task of 1e3 times a server, weights 1e4 apart, a task limit
    // of 1e15.
    let inst = Builder::new(&[&[1e9, 1.0], &[1e3, 1.0]], &[&[1.0, 1e-3], &[1.0, 1e3], &[2.0, 1e-3]])
        .weights(&[1e-2, 1e-2 * WEIGHT_SPREAD, 1.0])
        .max_tasks(&[1e15, 1e15, 1e15])
        .build()
        .expect("on the bounds");
    assert_eq!((TASKS_PER_SERVER, TASK_SIZE, CAPACITY_SPREAD, DEMAND_SPREAD), (1e9, 1e3, 1e6, 1e6));
    for policy in MultiPolicy::ALL {
        match run(policy, &inst) {
            // Whole tasks: placing 1e9 tasks one by one is refused by design (MAX_PLACED).
            Ok(_) | Err(MultiError::Unsupported(_)) if policy.whole_tasks() => {}
            Ok(report) => {
                for (n, &t) in report.allocation.totals.iter().enumerate() {
                    assert!(t > 0.0 && t.is_finite(), "{policy}: user {n} got {t}: {:?}", report.allocation.totals);
                }
            }
            Err(e) => panic!("{policy}: {e}"),
        }
    }
}

/// LP (7) on three servers of 1e6 units, tasks of 0.019 and 0.0016 units: each user's
/// dominant share is 1/2 of the pool. Before the solver rescaled its programs, Clarabel
/// ("almost solved") gave the first user 0 tasks and the second all 3e6 units.
#[test]
fn solver_scaling_does_not_starve_a_user() {
    let (a, b) = (0.019260039732887743, 0.0015705118830705985);
    let inst = Builder::new(&[&[1e6], &[1e6], &[1e6]], &[&[a], &[b]]).build().expect("valid");
    let (_, alloc) = drfh_lp(&inst).expect("solves");
    for (got, want) in alloc.totals.iter().zip([1.5e6 / a, 1.5e6 / b]) {
        assert!((got - want).abs() <= 1e-6 * want, "{:?}, want {want}", alloc.totals);
    }
    // Every LP-based policy, and the exact ones, agree.
    for policy in [MultiPolicy::Drf, MultiPolicy::Drfh, MultiPolicy::Tsf, MultiPolicy::Cdrf, MultiPolicy::PsdsfRdm] {
        let totals = run(policy, &inst).expect("solves").allocation.totals;
        assert!((totals[0] * a - 1.5e6).abs() <= 1e-6 * 1.5e6, "{policy}: {totals:?}");
    }
}

/// TSF on a server with 0.0017 units of a resource of which tasks need 402 and 1000: the
/// solver returned 2.5e-4 tasks for the first user, 60 times what the server holds.
/// Such tasks (over 1e3 times the server) are now refused, naming the largest.
#[test]
fn a_task_far_larger_than_a_server_is_refused() {
    let b = Builder::new(&[&[0.0017090038401493476, 1000.0]], &[&[402.26876583977906, 0.001], &[1000.0, 0.0076]])
        .weights(&[1000.0, 0.2]);
    match b.build() {
        Err(MultiError::Invalid(message)) => assert!(
            message.starts_with(
                r#"user "u2": demand[r1] 1000 is more than 1e3 times server "s1"'s capacity[r1] 0.0017090038401493476"#
            ),
            "{message}"
        ),
        other => panic!("expected the task to be refused, got {other:?}"),
    }
}

/// Found by the property below: C-DRFH and TSF froze a user at 2e-6 tasks next to a
/// resource of 1578 units, and the solver, at its default tolerance, reported "solved"
/// for a point that gave it 0. A point that misses a constraint is now refused: such a
/// policy answers with every user positive, or with an error, never with a silent 0.
#[test]
fn a_user_below_the_solver_tolerance_gets_an_error_not_a_zero() {
    let json = r#"{"resources": ["r1", "r2"],
        "servers": [{"name": "s1", "capacity": [0, 1e-6]}, {"name": "s2", "capacity": [1e9, 0]},
                    {"name": "s3", "capacity": [1577.9903406844348, 0.005260815083754459]}],
        "users": [
            {"name": "u1", "demand": [1e6, 0], "weight": 0.010738412311676252, "eligible": ["s1", "s3"]},
            {"name": "u2", "demand": [0, 8.612108422861128e-6], "weight": 1.382534030809366e-6,
             "eligible": ["s1", "s2"], "max_tasks": 127474291.01239811},
            {"name": "u3", "demand": [1, 3.7177842225356598e-6], "weight": 1.382534030809366e-6},
            {"name": "u4", "demand": [1e6, 4.808412015814065e-5], "weight": 1.3262981849241187e-5,
             "max_tasks": 23.089523246226932},
            {"name": "u5", "demand": [0, 1e-6], "weight": 0.013825340308093658, "max_tasks": 1e15}]}"#;
    let inst = Instance::from_json(json).expect("within the ranges");
    let mut answered = Vec::new();
    for policy in MultiPolicy::ALL.into_iter().filter(|p| !p.whole_tasks()) {
        if let Ok(report) = run(policy, &inst) {
            let totals = &report.allocation.totals;
            assert!(totals.iter().all(|&t| t > 0.0), "{policy}: {totals:?}");
            answered.push(policy);
        }
    }
    // Not vacuous: some policy that goes through the linear programs answers.
    let lp = [MultiPolicy::Drfh, MultiPolicy::Tsf, MultiPolicy::Cdrf];
    assert!(answered.iter().any(|p| lp.contains(p)), "no linear-programming policy answered: {answered:?}");
}

/// A number log-uniform in `[lo, hi]`, or one of the two ends (a quarter of the time each).
fn log_uniform(lo: f64, hi: f64) -> impl Strategy<Value = f64> {
    // Bounds computed by division can cross by an ulp.
    let hi = hi.max(lo);
    prop_oneof![
        1 => Just(lo),
        1 => Just(hi),
        2 => (0.0..=1.0f64).prop_map(move |u| (lo.ln() + u * (hi.ln() - lo.ln())).exp().clamp(lo, hi)),
    ]
}

/// `count` numbers in `[lo, hi]` (log-uniform, often at an end), each replaced by 0 with
/// probability `zeros` / 8.
fn amounts(count: usize, lo: f64, hi: f64, zeros: u32) -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec((0u32..8, log_uniform(lo, hi)), count)
        .prop_map(move |v| v.into_iter().map(|(z, x)| if z < zeros { 0.0 } else { x }).collect())
}

/// One resource: the capacities of `k` servers within one window of the largest spread
/// allowed, then the demands of `n` users within one window of theirs, inside what the
/// capacities allow (at most 1e9 tasks per server, no task over 1e3 times a server).
fn resource(k: usize, n: usize) -> impl Strategy<Value = (Vec<f64>, Vec<f64>)> {
    let (cs, ds, tps, ts) = (CAPACITY_SPREAD, DEMAND_SPREAD, TASKS_PER_SERVER, TASK_SIZE);
    log_uniform(1e-6, 1e9 / cs).prop_flat_map(move |lo| {
        amounts(k, lo, lo * cs, 1).prop_flat_map(move |c| {
            let positive = c.iter().cloned().filter(|&v| v > 0.0);
            let (c_lo, c_hi) = positive.fold((f64::INFINITY, 0.0f64), |(a, b), v| (a.min(v), b.max(v)));
            let (c_lo, c_hi) = if c_hi > 0.0 { (c_lo, c_hi) } else { (lo, lo) };
            let (d_min, d_max) = ((c_hi / tps).max(1e-6), (c_lo * ts).min(1e9));
            let width = (d_max / d_min).min(ds);
            (Just(c), log_uniform(d_min, d_max / width).prop_flat_map(move |a| amounts(n, a, a * width, 2)))
        })
    })
}

/// Random instances anywhere within the documented ranges, often at their bounds: up to
/// 5 users, 3 servers, 3 resources, zeros included; weights in one window of 1e4; task
/// limits in [1e-6, 1e15] or none; random eligibility. Invalid draws (a user eligible
/// nowhere or demanding nothing) are skipped.
fn instances() -> impl Strategy<Value = Instance> {
    (1usize..=5, 1usize..=3, 1usize..=3).prop_flat_map(|(n, k, m)| {
        (
            prop::collection::vec(resource(k, n), m),
            log_uniform(1e-6, 1e6 / WEIGHT_SPREAD)
                .prop_flat_map(move |lo| prop::collection::vec(log_uniform(lo, lo * WEIGHT_SPREAD), n)),
            prop::collection::vec(prop::option::weighted(0.5, log_uniform(1e-6, 1e15)), n),
            prop::collection::vec(prop::collection::vec(prop::bool::weighted(0.8), k), n),
            any::<bool>(),
        )
            .prop_filter_map("valid instance", move |(amounts, w, limits, e, constrained)| {
                let c: Vec<Vec<f64>> = (0..k).map(|i| (0..m).map(|r| amounts[r].0[i]).collect()).collect();
                let d: Vec<Vec<f64>> = (0..n).map(|u| (0..m).map(|r| amounts[r].1[u]).collect()).collect();
                let cr: Vec<&[f64]> = c.iter().map(|r| r.as_slice()).collect();
                let dr: Vec<&[f64]> = d.iter().map(|r| r.as_slice()).collect();
                let er: Vec<&[bool]> = e.iter().map(|r| r.as_slice()).collect();
                let t: Vec<f64> = limits.iter().map(|t| t.unwrap_or(1.0)).collect();
                let b = Builder::new(&cr, &dr).weights(&w).max_tasks(&t);
                let b = if constrained { b.eligible(&er) } else { b };
                let mut inst = b.build().ok()?;
                // No limit where none was drawn (always valid).
                inst.max_tasks = limits;
                Some(inst)
            })
    })
}

/// Within the ranges, every policy that answers gives every user with a positive
/// demand, weight and task limit a positive allocation: no 0 from scaling.
///
/// Restricted honestly: the whole-task heuristics (`drfh-firstfit`, `drfh-bestfit`)
/// are left out, because by design a user whose one task does not fit in what is
/// left on any eligible server gets 0 whole tasks; a user whose task limit is 0 gets 0
/// by request; and under `bbf` a user needs a positive entitlement (the default, its
/// weight, is). Errors are not answers: a policy refusing an instance outside its model
/// (`bbf` without task limits) is allowed; a solver that gives up, a method that does not
/// converge or a lexicographic program that left a user below half its level (an error
/// since this item, where it used to be a silent 0) are counted, and may occur on at
/// most 5% of the instances: a fixed-seed run of 1,000 cases had them on 12 instances
/// (1.2%, all from `drfh`, `tsf` or `cdrf`), so 5% of 300 cases holds with a wide margin
/// and still fails if the solves start failing wholesale. Run with 5,000 cases 40 times
/// while choosing the bounds without a failure.
#[test]
fn within_the_ranges_no_policy_starves_a_user() {
    let config = ProptestConfig { cases: 300, ..ProptestConfig::default() };
    let (instances_run, failed, answers) = (Cell::new(0u32), Cell::new(Vec::new()), Cell::new(0u32));
    let mut runner = TestRunner::new(config);
    let result = runner.run(&instances(), |inst| {
        instances_run.set(instances_run.get() + 1);
        let mut errors = Vec::new();
        for policy in MultiPolicy::ALL.into_iter().filter(|p| !p.whole_tasks()) {
            let report = match run(policy, &inst) {
                Ok(report) => report,
                Err(MultiError::Unsupported(_)) => continue,
                Err(e) => {
                    errors.push(format!("{policy}: {e}"));
                    continue;
                }
            };
            answers.set(answers.get() + 1);
            for n in 0..inst.n_users() {
                let tasks = report.allocation.totals[n];
                let limited_to_zero = inst.max_tasks[n] == Some(0.0);
                let unentitled = policy == MultiPolicy::Bbf && inst.entitlement[n] == 0.0;
                if !limited_to_zero && !unentitled {
                    prop_assert!(
                        tasks > 0.0 && tasks.is_finite(),
                        "{policy}: user {n} got {tasks}: {:?}",
                        report.allocation.totals
                    );
                }
            }
        }
        if !errors.is_empty() {
            let mut all = failed.take();
            all.push(errors.join("; "));
            failed.set(all);
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    let (runs, failed) = (instances_run.get(), failed.take());
    assert!(answers.get() > 0, "no policy answered on any of {runs} instances");
    assert!(
        failed.len() * 20 <= runs as usize,
        "errors on {} of {runs} instances (at most 5% allowed): {failed:#?}",
        failed.len()
    );
}
