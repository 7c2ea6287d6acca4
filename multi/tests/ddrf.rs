//! Dynamic DRF (`docs/spec/ddrf_bbf.md` Part A) in exact rationals: the worked examples
//! A-Ex1..A-Ex4 with the spec's numbers, the line-6 erratum as a regression, and the
//! properties P-A1..P-A17 on random instances, both algorithms compared exactly.

use fairshare_multi::ddrf::{self, li, scan, Step};
use fairshare_multi::Builder;
use num_rational::BigRational;
use num_traits::{One, Zero};
use proptest::prelude::*;

type Q = BigRational;

fn q(a: i64, b: i64) -> Q {
    Q::new(a.into(), b.into())
}

fn rows(d: &[&[Q]]) -> Vec<Vec<Q>> {
    d.iter().map(|r| r.to_vec()).collect()
}

/// Usage of each resource at a step: `sum_i d_ir x_i`.
fn usage(d: &[Vec<Q>], s: &Step<Q>) -> Vec<Q> {
    (0..d[0].len()).map(|r| s.shares.iter().zip(d).fold(Q::zero(), |a, (x, di)| a + &di[r] * x)).collect()
}

/// Static DRF at step k: every present user gets `min_r (k/n) / sum_{i<=k} d_ir`.
fn static_drf(d: &[Vec<Q>], k: usize, n: usize) -> Q {
    (0..d[0].len())
        .filter_map(|r| {
            let s = d[..k].iter().fold(Q::zero(), |a, di| a + &di[r]);
            (!s.is_zero()).then(|| q(k as i64, n as i64) / s)
        })
        .min()
        .expect("some demand")
}

/// Both algorithms, which must agree exactly.
fn run(d: &[Vec<Q>], n: usize) -> Vec<Step<Q>> {
    let a = scan(d, n);
    assert_eq!(a, li(d, n), "scan and Li's binary search differ");
    a
}

fn unit(m: usize, dominant: usize, eps: &Q) -> Vec<Q> {
    (0..m).map(|r| if r == dominant { Q::one() } else { eps.clone() }).collect()
}

#[test]
fn a_ex1_the_max_sum_ratio_exceeds_one() {
    let eps = q(1, 100);
    // m = 2, n = 3.
    let d = vec![unit(2, 0, &eps), unit(2, 1, &eps), vec![Q::one(), Q::one()]];
    let s = run(&d, 3);
    assert_eq!(s.iter().map(|s| s.level.clone()).collect::<Vec<_>>(), [q(1, 3), q(200, 303), q(1, 3)]);
    assert_eq!(s[2].shares, [q(200, 303), q(200, 303), q(1, 3)]);
    assert_eq!(usage(&d, &s[0]), [q(1, 3), q(1, 300)]);
    assert_eq!(usage(&d, &s[1]), [q(2, 3), q(2, 3)]);
    assert_eq!(usage(&d, &s[2]), [q(1, 1), q(1, 1)]);
    assert_eq!((1..=3).map(|k| static_drf(&d, k, 3)).collect::<Vec<_>>(), [q(1, 3), q(200, 303), q(100, 201)]);
    let dynamic: Q = s[2].shares.iter().sum();
    assert_eq!(dynamic, q(167, 101));
    assert!(dynamic > q(3, 1) * q(100, 201), "CR_1 > 1");
    // m = 3, n = 4.
    let d = vec![unit(3, 0, &eps), unit(3, 1, &eps), unit(3, 2, &eps), vec![Q::one(); 3]];
    let s = run(&d, 4);
    assert_eq!(s[0].shares, [q(1, 4)]);
    assert_eq!(s[1].shares, [q(50, 101), q(50, 101)]);
    assert_eq!(s[2].shares, [q(25, 34), q(25, 34), q(25, 34)]);
    assert_eq!(s[3].shares, [q(25, 34), q(25, 34), q(25, 34), q(1, 4)]);
    assert_eq!(static_drf(&d, 4, 4), q(50, 101));
    assert_eq!(s[3].shares.iter().sum::<Q>(), q(167, 68));
}

/// A-Ex2's family: user i's dominant resource cycles 1, 2, .., m; `eps` elsewhere.
fn cycle(m: usize, eps: &Q) -> Vec<Vec<Q>> {
    (0..m * m + 1).map(|i| unit(m, i % m, eps)).collect()
}

#[test]
fn a_ex2_the_theorem_2_upper_bound_family() {
    let d = cycle(2, &q(1, 1000));
    let s = run(&d, 5);
    let levels: Vec<Q> = s.iter().map(|s| s.level.clone()).collect();
    assert_eq!(levels, [q(1, 5), q(400, 1001), q(1, 5), q(400, 1001), q(1, 5)]);
    assert_eq!(s[4].shares, [q(400, 1001), q(400, 1001), q(400, 1001), q(400, 1001), q(1, 5)]);
    let usages: Vec<Vec<Q>> = s.iter().map(|s| usage(&d, s)).collect();
    assert_eq!(
        usages,
        [
            vec![q(1, 5), q(1, 5000)],
            vec![q(2, 5), q(2, 5)],
            vec![q(3, 5), q(2001, 5000)],
            vec![q(4, 5), q(4, 5)],
            vec![q(1, 1), q(4001, 5000)],
        ]
    );
    let statics: Vec<Q> = (1..=5).map(|k| static_drf(&d, k, 5)).collect();
    assert_eq!(statics, [q(1, 5), q(400, 1001), q(200, 667), q(400, 1001), q(500, 1501)]);
    assert_eq!(&levels[4] / &statics[4], q(1501, 2500));
    // The eps = 0 limit, run with zero demands.
    let d = cycle(2, &Q::zero());
    let s = run(&d, 5);
    assert_eq!(s.iter().map(|s| s.level.clone()).collect::<Vec<_>>(), [q(1, 5), q(2, 5), q(1, 5), q(2, 5), q(1, 5)]);
    let ratios: Vec<Q> = (1..=5).map(|k| &s[k - 1].level / static_drf(&d, k, 5)).collect();
    assert_eq!(ratios, [q(1, 1), q(1, 1), q(2, 3), q(1, 1), q(3, 5)], "3/5 = (m+1)/(m^2+1)");
    // m = 3, n = 10.
    let d = cycle(3, &Q::zero());
    let s = run(&d, 10);
    let want: Vec<Q> = (0..10).map(|k| [q(1, 10), q(1, 5), q(3, 10)][k % 3].clone()).collect();
    assert_eq!(s.iter().map(|s| s.level.clone()).collect::<Vec<_>>(), want);
    assert!(s[8].shares.iter().all(|x| *x == q(3, 10)), "all nine at m/(m^2+1)");
    let ratio = |k: usize| &s[k - 1].level / static_drf(&d, k, 10);
    assert_eq!([ratio(4), ratio(5), ratio(7), ratio(8), ratio(10)], [q(1, 2), q(4, 5), q(3, 7), q(3, 4), q(2, 5)]);
    let d = cycle(3, &q(1, 1000));
    let s = run(&d, 10);
    let want: Vec<Q> = (0..10).map(|k| [q(1, 10), q(200, 1001), q(50, 167)][k % 3].clone()).collect();
    assert_eq!(s.iter().map(|s| s.level.clone()).collect::<Vec<_>>(), want);
    assert_eq!(&s[9].level / static_drf(&d, 10, 10), q(2003, 5000));
}

#[test]
fn a_ex3_line_6_as_printed_would_be_infeasible() {
    let d = rows(&[&[q(1, 1), q(1, 100)], &[q(1, 100), q(1, 1)], &[q(1, 1), q(1, 1)]]);
    let s = run(&d, 3);
    assert_eq!(s[1].shares, [q(200, 303), q(200, 303)]);
    assert_eq!(s[2].shares, [q(200, 303), q(200, 303), q(1, 3)]);
    assert!(usage(&d, &s[2]).iter().all(|u| *u <= Q::one()));
    // The literal line 6 always takes tau = 1: M = min_r (k/n) / sum_i d_ir = 100/201.
    let literal_m = q(100, 201);
    let literal = Step { level: literal_m.clone(), shares: vec![q(200, 303), q(200, 303), literal_m] };
    assert_eq!(usage(&d, &literal)[0], q(78, 67), "infeasible: 78/67 > 1");
}

#[test]
fn a_ex4_binary_search_trace() {
    let d = rows(&[
        &[q(3, 10), q(3, 10), q(1, 1)],
        &[q(1, 1), q(1, 2), q(1, 5)],
        &[q(1, 3), q(1, 3), q(1, 1)],
        &[q(1, 2), q(2, 5), q(1, 1)],
        &[q(1, 10), q(1, 1), q(1, 2)],
    ]);
    let s = run(&d, 5);
    assert_eq!(
        s.iter().map(|s| s.level.clone()).collect::<Vec<_>>(),
        [q(1, 5), q(4, 13), q(3, 13), q(1, 5), q(82, 325)]
    );
    assert_eq!(s[4].shares, [q(4, 13), q(4, 13), q(82, 325), q(82, 325), q(82, 325)]);
    let usages: Vec<Vec<Q>> = s.iter().map(|s| usage(&d, s)).collect();
    assert_eq!(
        usages,
        [
            vec![q(3, 50), q(3, 50), q(1, 5)],
            vec![q(2, 5), q(16, 65), q(24, 65)],
            vec![q(31, 65), q(21, 65), q(3, 5)],
            vec![q(15, 26), q(131, 325), q(4, 5)],
            vec![q(3098, 4875), q(3332, 4875), q(1, 1)],
        ]
    );
    // Canonical tau: k at steps 3 and 4 (P1 says tau <= k - 1), 3 at step 5.
    let tau = |k: usize| {
        let prev: Vec<Q> = if k == 1 { vec![] } else { s[k - 2].shares.clone() };
        (1..=k).find(|&i| prev.get(i - 1).cloned().unwrap_or_else(Q::zero) <= s[k - 1].level).expect("exists")
    };
    assert_eq!([tau(3), tau(4), tau(5)], [3, 4, 3]);
}

#[test]
fn the_instance_entry_point_converts_to_tasks() {
    // A-Ex4's raw demands on one server of 100 units of each resource.
    let inst = Builder::new(
        &[&[100.0, 100.0, 100.0]],
        &[&[3.0, 3.0, 10.0], &[10.0, 5.0, 2.0], &[1.0, 1.0, 3.0], &[5.0, 4.0, 10.0], &[1.0, 10.0, 5.0]],
    )
    .build()
    .expect("valid");
    let steps = ddrf::ddrf(&inst).expect("runs");
    assert_eq!(steps.len(), 5);
    assert_eq!(steps[0].totals.len(), 1);
    // Tasks = dominant share / (largest demand / 100).
    let want = [4.0 / 13.0 / 0.1, 4.0 / 13.0 / 0.1, 82.0 / 325.0 / 0.03, 82.0 / 325.0 / 0.1, 82.0 / 325.0 / 0.1];
    for (got, want) in steps[4].totals.iter().zip(want) {
        assert!((got - want).abs() < 1e-12 * want, "{got} vs {want}");
    }
    assert!(steps[4].per_server.is_none());
}

/// Random instances: n users (all arriving), m resources, integer raw demands 1..=20,
/// normalized exactly.
fn instances() -> impl Strategy<Value = (Vec<Vec<Q>>, usize)> {
    (1usize..=12, 1usize..=5).prop_flat_map(|(n, m)| {
        prop::collection::vec(prop::collection::vec(1i64..=20, m), n).prop_map(move |raw| {
            let d = raw
                .iter()
                .map(|row| {
                    let max = *row.iter().max().expect("m >= 1");
                    row.iter().map(|&v| q(v, max)).collect()
                })
                .collect();
            (d, n)
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn properties_p_a1_to_p_a17((d, n) in instances()) {
        let s = run(&d, n); // P-A16: scan = Li, exactly.
        let m = d[0].len();
        let mut prev_usage = vec![Q::zero(); m];
        for k in 1..=n {
            let step = &s[k - 1];
            let cap = q(k as i64, n as i64);
            let u = usage(&d, step);
            prop_assert!(u.iter().all(|v| *v <= cap), "P-A1 feasibility");
            prop_assert!(u.contains(&cap), "P-A4 DPO / P-A10: a resource is exactly full");
            prop_assert!(u.iter().zip(&prev_usage).all(|(a, b)| a >= b), "P-A17 usage grows");
            prev_usage = u;
            prop_assert!(step.shares.iter().all(|x| *x >= q(1, n as i64)), "P-A5 SI");
            prop_assert!(step.shares.iter().all(|x| *x <= cap), "P-A17 x <= k/n");
            prop_assert_eq!(step.shares.iter().min(), Some(&step.level), "P-A9");
            prop_assert_eq!(&step.shares[k - 1], &step.level, "P-A9");
            for i in 1..k {
                prop_assert!(step.shares[i - 1] >= step.shares[i], "P-A8 Lemma 2");
                let before = &s[k - 2].shares[i - 1];
                prop_assert!(step.shares[i - 1] >= *before, "P-A3 irrevocable");
                let lemma = if *before > step.level { before.clone() } else { step.level.clone() };
                prop_assert_eq!(&step.shares[i - 1], &lemma, "P-A7 Lemma 1");
            }
            // P-A11: a canonical threshold exists in 1..=k.
            let prev: Vec<Q> = if k == 1 { vec![] } else { s[k - 2].shares.clone() };
            prop_assert!((1..=k).any(|i| prev.get(i - 1).cloned().unwrap_or_else(Q::zero) <= step.level));
            // P-A6 DEF, dominant-share and envy forms.
            for i in 1..=k {
                for j in 1..=k {
                    let envy = (0..m)
                        .filter(|&r| !d[i - 1][r].is_zero())
                        .map(|r| &step.shares[j - 1] * &d[j - 1][r] / &d[i - 1][r])
                        .min()
                        .expect("a demand");
                    if step.shares[j - 1] > step.shares[i - 1] || envy > step.shares[i - 1] {
                        prop_assert!(j < i, "DEF: {j} ahead of {i} at step {k}");
                        let at_arrival = if i >= 2 { s[i - 2].shares[j - 1].clone() } else { Q::zero() };
                        prop_assert_eq!(&step.shares[j - 1], &at_arrival, "DEF: {} gained since {} arrived", j, i);
                    }
                }
            }
            // P-A13: the newcomer gets at most static DRF, and at least ceil(k/m)/k of it.
            let xdot = static_drf(&d, k, n);
            prop_assert!(step.level <= xdot);
            prop_assert!(&step.level / &xdot >= q(k.div_ceil(m) as i64, k as i64));
        }
    }

    #[test]
    fn p_a12_no_misreport_pays((d, n) in instances(), who in 0usize..12, lie in prop::collection::vec(1i64..=20, 5)) {
        let i = who % n;
        let m = d[0].len();
        let max = *lie[..m].iter().max().expect("m >= 1");
        let mut lying = d.clone();
        lying[i] = lie[..m].iter().map(|&v| q(v, max)).collect();
        let truthful = run(&d, n);
        let reported = run(&lying, n);
        for k in i + 1..=n {
            let got = &reported[k - 1].shares[i];
            let utility = (0..m).map(|r| got * &lying[i][r] / &d[i][r]).min().expect("m >= 1");
            prop_assert!(utility <= truthful[k - 1].shares[i], "step {k}: lying pays");
        }
    }
}
