//! Property tests on random instances (10,000 per property per run): the batched
//! implementations against the literal oracles, and the invariants and theorems of
//! `docs/spec/karma.md`. The instances include the edges: one user, all demands zero,
//! demands up to u32::MAX, credits at or near zero, alpha 0 and 1, weights 1000x apart.

#![allow(clippy::unwrap_used)]

use fairshare::policy::{karma, maxmin, strict, Outcome};
use fairshare::{Alpha, Credits, Error, KarmaParams, PoolConfig, UserConfig};
use proptest::collection::vec;
use proptest::prelude::*;

const CASES: u32 = 10_000;

fn config() -> ProptestConfig {
    ProptestConfig { cases: CASES, max_shrink_iters: 2_000, ..ProptestConfig::default() }
}

/// Fair shares for `n` users: equal, mildly weighted, or 1000x apart.
fn shares(n: usize) -> BoxedStrategy<Vec<u64>> {
    prop_oneof![
        3 => (1..=20u64).prop_map(move |f| vec![f; n]),
        2 => vec(1..=20u64, n),
        1 => vec(prop_oneof![Just(1u64), Just(1000u64), 1..=1000u64], n),
    ]
    .boxed()
}

/// Guaranteed shares for the given fair shares: alpha 0, alpha 1, a random alpha for
/// the whole pool, or a random `g <= f` per user.
fn guaranteed(f: Vec<u64>) -> BoxedStrategy<(Vec<u64>, Vec<u64>)> {
    let n = f.len();
    let (f1, f2, f3, f4) = (f.clone(), f.clone(), f.clone(), f);
    prop_oneof![
        Just((f1.clone(), vec![0; n])),
        Just((f2.clone(), f2)),
        (0..=100u64)
            .prop_map(move |a| (f3.clone(), f3.iter().map(|&f| Alpha::new(a, 100).unwrap().guaranteed(f)).collect())),
        vec(0..=1000u64, n).prop_map(move |r| (f4.clone(), f4.iter().zip(r).map(|(&f, r)| r % (f + 1)).collect())),
    ]
    .boxed()
}

fn initial_credits() -> impl Strategy<Value = i64> {
    prop_oneof![Just(0i64), Just(1), 0..=5i64, 0..=1_000i64, Just(900_000), Just(1_000_000_000_000)]
}

/// Whole credits within a few quanta of the top of the range, where a quantum may
/// overflow: both implementations must then fail alike.
fn near_max_credits() -> impl Strategy<Value = i64> {
    (0..=40i64).prop_map(|k| (i64::MAX >> 16) - k)
}

fn pool(max_users: usize) -> impl Strategy<Value = PoolConfig> {
    pool_with(max_users, initial_credits().boxed())
}

fn pool_with(max_users: usize, credits: BoxedStrategy<i64>) -> impl Strategy<Value = PoolConfig> {
    (1..=max_users)
        .prop_flat_map(shares)
        .prop_flat_map(guaranteed)
        .prop_flat_map(move |(f, g)| (Just(f), Just(g), credits.clone()))
        .prop_map(|(f, g, c)| PoolConfig {
            users: (0..f.len())
                .map(|i| UserConfig {
                    name: format!("u{i}"),
                    fair_share: f[i],
                    guaranteed: g[i],
                    initial_credits: Credits::from_int(c).unwrap(),
                })
                .collect(),
        })
}

/// One demand for a user with fair share `f`: zero, around the share, far above the
/// pool (up to u32::MAX).
fn demand(f: u64) -> BoxedStrategy<u64> {
    prop_oneof![
        2 => Just(0u64),
        4 => 0..=f,
        4 => 0..=3 * f,
        2 => f..=6 * f,
        1 => Just(u32::MAX as u64),
        1 => 0..=u32::MAX as u64,
    ]
    .boxed()
}

fn demands(cfg: &PoolConfig, max_quanta: usize) -> BoxedStrategy<Vec<Vec<u64>>> {
    let per_user: Vec<BoxedStrategy<u64>> = cfg.users.iter().map(|u| demand(u.fair_share)).collect();
    let n = cfg.users.len();
    let quantum = prop_oneof![9 => per_user, 1 => Just(vec![0u64; n])];
    vec(quantum, 1..=max_quanta).boxed()
}

fn instance(max_users: usize, max_quanta: usize) -> impl Strategy<Value = (PoolConfig, Vec<Vec<u64>>)> {
    let credits = prop_oneof![9 => initial_credits(), 1 => near_max_credits()].boxed();
    pool_with(max_users, credits).prop_flat_map(move |cfg| {
        let d = demands(&cfg, max_quanta);
        (Just(cfg), d)
    })
}

fn start(cfg: &PoolConfig) -> (KarmaParams, Vec<Credits>) {
    (KarmaParams::from_config(cfg).unwrap(), cfg.users.iter().map(|u| u.initial_credits).collect())
}

proptest! {
    #![proptest_config(config())]

    /// The batched quantum equals the literal loop, credits carried across quanta.
    #[test]
    fn karma_batched_equals_literal((cfg, quanta) in instance(12, 5)) {
        let (p, mut credits) = start(&cfg);
        for d in &quanta {
            let lit = karma::literal(&p, d, &credits);
            let bat = karma::batched(&p, d, &credits);
            prop_assert_eq!(&bat, &lit, "demand {:?} credits {:?}", d, credits);
            match lit {
                Ok(out) => credits = out.credits,
                Err(e) => {
                    prop_assert!(matches!(e, Error::CreditOverflow { .. }), "{}", e);
                    break;
                }
            }
        }
    }

    /// alloc <= demand, alloc >= min(demand, g), sum <= C, Pareto efficiency, credit
    /// conservation, and the per-borrower limit min(d - g, credits) for equal shares.
    #[test]
    fn karma_invariants((cfg, quanta) in instance(12, 5)) {
        let (p, mut credits) = start(&cfg);
        let equal = p.price.iter().all(|&c| c == Credits::ONE) && p.free.is_integer();
        for d in &quanta {
            // Near the top of the range a quantum may overflow; it must say so, and the
            // sequence ends there (karma_batched_equals_literal checks the error itself).
            let Outcome { alloc, credits: after } = match karma::batched(&p, d, &credits) {
                Ok(out) => out,
                Err(e) => {
                    prop_assert!(matches!(e, Error::CreditOverflow { .. }), "{}", e);
                    prop_assert!(credits.iter().any(|c| c.raw() > i64::MAX / 2), "overflow far from the limit: {}", e);
                    break;
                }
            };
            let n = d.len();
            let sum: u128 = alloc.iter().map(|&a| a as u128).sum();
            prop_assert!(sum <= p.capacity as u128);
            let mut borrowed_total = 0u128;
            let mut donated_total = 0u128;
            let mut priced: i128 = 0;
            for u in 0..n {
                let g = p.guaranteed[u];
                prop_assert!(alloc[u] <= d[u]);
                prop_assert!(alloc[u] >= d[u].min(g));
                let borrowed = alloc[u] - d[u].min(g);
                borrowed_total += borrowed as u128;
                donated_total += g.saturating_sub(d[u]) as u128;
                priced += borrowed as i128 * p.price[u].raw() as i128;
                let before = credits[u].raw() as i128 + p.free.raw() as i128; // after step 1
                if borrowed > 0 {
                    prop_assert!(before > 0, "user {} borrowed without credits", u);
                    // It stopped while still positive, or at its demand, or it was cut off by the pool.
                    let last_key = before - (borrowed as i128 - 1) * p.price[u].raw() as i128;
                    prop_assert!(last_key > 0);
                }
                if equal && d[u] > g {
                    let limit = (d[u] - g).min(u64::try_from(before.max(0) >> 16).unwrap());
                    prop_assert!(borrowed <= limit);
                }
                // Pareto: unmet demand with positive credits only if the pool is exhausted.
                if alloc[u] < d[u] && after[u].raw() > 0 {
                    prop_assert_eq!(sum, p.capacity as u128, "user {} unmet with credits {}", u, after[u]);
                }
            }
            let used_donated = borrowed_total.min(donated_total);
            let shared_used = borrowed_total - used_donated;
            let delta: i128 = after.iter().zip(&credits).map(|(a, b)| a.raw() as i128 - b.raw() as i128).sum();
            // General (Algorithm 2): n * free - sum(borrowed * price) + used donated * 1.
            let expected = n as i128 * p.free.raw() as i128 - priced + used_donated as i128 * 65536;
            prop_assert_eq!(delta, expected);
            if equal && p.guaranteed.iter().all(|&g| g == p.guaranteed[0]) {
                // Algorithm 1: sum after - sum before = S - shared slices used.
                prop_assert_eq!(delta, (p.shared as i128 - shared_used as i128) * 65536);
            }
            credits = after;
        }
    }

    /// Max-min: batched water-filling equals slice-by-slice progressive filling; it is
    /// work-conserving and never gives more than the demand.
    #[test]
    fn maxmin_batched_equals_literal(f in (1..=12usize).prop_flat_map(|n| vec(1..=50u64, n)), raw in vec(0..=200u64, 12)) {
        let c: u64 = f.iter().sum();
        let d: Vec<u64> = raw[..f.len()].to_vec();
        let a = maxmin::batched(&f, c, &d);
        prop_assert_eq!(&a, &maxmin::literal(&f, c, &d));
        prop_assert!(a.iter().zip(&d).all(|(a, d)| a <= d));
        let total: u64 = a.iter().sum();
        prop_assert_eq!(total, c.min(d.iter().sum()));
    }

    /// Max-min with weights 1000x apart and with demands far above the pool.
    #[test]
    fn maxmin_extreme_weights_and_demands(f in vec(prop_oneof![Just(1u64), Just(1000u64)], 1..=3), raw in vec(0..=20u64, 3), huge in vec(prop_oneof![Just(0u64), Just(u32::MAX as u64), 0..=u32::MAX as u64], 12)) {
        let c: u64 = f.iter().sum();
        let d: Vec<u64> = raw[..f.len()].to_vec();
        prop_assert_eq!(maxmin::batched(&f, c, &d), maxmin::literal(&f, c, &d));
        let fs = vec![7u64; 12];
        let a = maxmin::batched(&fs, 84, &huge);
        prop_assert!(a.iter().zip(&huge).all(|(a, d)| a <= d));
        prop_assert_eq!(a.iter().sum::<u64>() as u128, (84u128).min(huge.iter().map(|&d| d as u128).sum()));
        // Equal shares: no user above another unless the other is satisfied.
        for u in 0..12 { for v in 0..12 { if a[u] < huge[u] { prop_assert!(a[v] <= a[u] + 1); } } }
    }

    /// Theorem 4 (alpha = 0, equal shares, equal initial credits): each quantum's Karma
    /// allocation maximizes the users' cumulative allocations lexicographically from the
    /// bottom. Checked against a water-filling on totals written independently of credits.
    #[test]
    fn theorem4_karma_is_lexicographic_water_filling(n in 1..=8usize, f in 1..=10u64, quanta in vec(vec(0..=40u64, 8), 1..=8)) {
        let cfg = PoolConfig::equal(n, f, Alpha::ZERO, 1_000_000).unwrap();
        let (p, mut credits) = start(&cfg);
        let mut totals = vec![0u64; n];
        for raw in &quanta {
            let d = &raw[..n];
            let out = karma::batched(&p, d, &credits).unwrap();
            let wf = water_fill_totals(&totals, d, p.capacity);
            let mut got: Vec<u64> = totals.iter().zip(&out.alloc).map(|(t, a)| t + a).collect();
            let mut want: Vec<u64> = totals.iter().zip(&wf).map(|(t, x)| t + x).collect();
            got.sort_unstable();
            want.sort_unstable();
            prop_assert_eq!(got, want);
            for u in 0..n { totals[u] += out.alloc[u]; }
            credits = out.credits;
        }
    }

    /// Lemma 1: reporting max(demand, fair share) instead of the true demand never raises
    /// a user's useful allocation (sum of min(alloc, true demand)) over a run.
    #[test]
    fn over_reporting_never_pays(cfg in pool(8), raw in vec(vec(0..=60u64, 8), 1..=8), who in 0..8usize) {
        let n = cfg.users.len();
        let who = who % n;
        let f = cfg.users[who].fair_share;
        let useful = |lie: bool| -> u128 {
            let (p, mut credits) = start(&cfg);
            let mut total = 0u128;
            for q in &raw {
                let mut d: Vec<u64> = q[..n].iter().zip(&cfg.users).map(|(&r, u)| r % (3 * u.fair_share + 1)).collect();
                let truth = d[who];
                if lie { d[who] = truth.max(f); }
                let out = karma::batched(&p, &d, &credits).unwrap();
                total += out.alloc[who].min(truth) as u128;
                credits = out.credits;
            }
            total
        };
        prop_assert!(useful(true) <= useful(false));
    }

    /// Sharing incentive: every user gets at least what strict partitioning would give it
    /// (`min(d, f)`) under max-min (any shares) and under Karma with alpha = 1.
    #[test]
    fn maxmin_and_karma_alpha1_dominate_strict((cfg, quanta) in pool(12).prop_flat_map(|cfg| { let d = demands(&cfg, 3); (Just(cfg), d) })) {
        let mut full = cfg.clone();
        for u in &mut full.users { u.guaranteed = u.fair_share; }
        let (p, mut credits) = start(&full);
        for d in &quanta {
            let s = strict::allocate(&p.fair_share, d);
            let m = maxmin::batched(&p.fair_share, p.capacity, d);
            let k = karma::batched(&p, d, &credits).unwrap();
            for u in 0..d.len() {
                prop_assert_eq!(s[u], d[u].min(p.fair_share[u]), "strict partitioning is min(d, f)");
                prop_assert!(m[u] >= s[u], "max-min user {} got {} < strict {}", u, m[u], s[u]);
                prop_assert!(k.alloc[u] >= s[u], "karma user {} got {} < strict {}", u, k.alloc[u], s[u]);
            }
            credits = k.credits;
        }
    }

    /// The derived Karma parameters are the documented roundings, characterized
    /// independently: the price is the smallest multiple of 2^-16 that is at least
    /// C / (n f_u), and the free credits the largest that is at most S / n.
    #[test]
    fn prices_round_up_and_free_credits_round_down(cfg in pool(12)) {
        let p = KarmaParams::from_config(&cfg).unwrap();
        let n = cfg.users.len() as u128;
        let c: u128 = cfg.users.iter().map(|u| u.fair_share as u128).sum();
        let shared: u128 = cfg.users.iter().map(|u| (u.fair_share - u.guaranteed) as u128).sum();
        for (u, user) in cfg.users.iter().enumerate() {
            let price = p.price[u].raw() as u128;
            let nf = n * user.fair_share as u128;
            prop_assert!(price * nf >= c << 16 && (price - 1) * nf < c << 16);
        }
        let free = p.free.raw() as u128;
        prop_assert!(free * n <= shared << 16 && (free + 1) * n > shared << 16);
        prop_assert_eq!((p.capacity as u128, p.shared as u128), (c, shared));
    }
}

/// Water-filling on cumulative totals: repeatedly give one slice to every user that
/// still wants one and whose total is the lowest, until the pool is used up.
fn water_fill_totals(totals: &[u64], demand: &[u64], capacity: u64) -> Vec<u64> {
    let mut x = vec![0u64; demand.len()];
    let mut left = capacity;
    loop {
        let active: Vec<usize> = (0..demand.len()).filter(|&u| x[u] < demand[u]).collect();
        let Some(level) = active.iter().map(|&u| totals[u] + x[u]).min() else { break };
        for &u in &active {
            if left > 0 && totals[u] + x[u] == level {
                x[u] += 1;
                left -= 1;
            }
        }
        if left == 0 {
            break;
        }
    }
    x
}

proptest! {
    #![proptest_config(config())]

    /// The device path's fast invariant check (`check_words`) gives the same verdict as
    /// the named one (`check`), on correct results and on results with one word nudged
    /// (an allocation or a balance one up or down, or anywhere in the word range), with
    /// balances small and near 2^29 and 2^30; pools of up to 10 users and of several
    /// of the fast check's blocks of 32 with a rest.
    #[test]
    fn invariant_check_in_words_agrees_with_the_named_check(
        n in prop_oneof![1..=10usize, 30..=100usize],
        f in 1..=20u64,
        g_num in 0..=4u64,
        credits in vec(0..=60u32, 100),
        base in prop_oneof![Just(0u32), Just((1 << 29) - 40), Just(1 << 30)],
        raw in vec(0..=50u32, 100),
        policy in prop_oneof![Just(fairshare::Policy::Karma), Just(fairshare::Policy::MaxMin), Just(fairshare::Policy::Strict)],
        nudge in prop_oneof![Just(None), (0..4usize, 0..100usize, prop_oneof![Just(1i64), Just(-1), any::<u32>().prop_map(|v| v as i64)]).prop_map(Some)],
    ) {
        use fairshare::policy::invariants::{check, check_words, Words};
        let cfg = PoolConfig::equal(n, f, Alpha::new(g_num, 4).unwrap(), 0).unwrap();
        let p = KarmaParams::from_config(&cfg).unwrap();
        let demand: Vec<u32> = raw[..n].to_vec();
        // Balances around 2^29 and 2^30 too: both of the fast check's widths.
        let before: Vec<u32> = credits[..n].iter().map(|&c| c + base).collect();
        let d64: Vec<u64> = demand.iter().map(|&d| d as u64).collect();
        let c: Vec<Credits> = before.iter().map(|&c| Credits::from_int(c as i64).unwrap()).collect();
        let out = fairshare::policy::run(policy, fairshare::Implementation::Batched, &p, &d64, &c).unwrap();
        let mut alloc: Vec<u32> = out.alloc.iter().map(|&a| a as u32).collect();
        let mut after: Vec<u32> = out.credits.iter().map(|c| c.floor_int() as u32).collect();
        if let Some((what, u, by)) = nudge {
            let word = if what % 2 == 0 { &mut alloc[u % n] } else { &mut after[u % n] };
            *word = if by.abs() == 1 { (*word as i64 + by).clamp(0, u32::MAX as i64) as u32 } else { by as u32 };
        }
        let fast = check_words(policy, &p, &Words { demand: &demand, before: &before, alloc: &alloc, after: &after });
        let wide = |x: &[u32]| x.iter().map(|&v| v as u64).collect::<Vec<_>>();
        let cred = |x: &[u32]| x.iter().map(|&v| Credits::from_int(v as i64).unwrap()).collect::<Vec<_>>();
        let named = check(policy, &p, &d64, &cred(&before), &wide(&alloc), &cred(&after));
        prop_assert_eq!(fast.is_ok(), named.is_ok(), "{:?} vs {:?}", fast, named);
        if nudge.is_none() {
            prop_assert!(fast.is_ok(), "a correct result fails: {:?}", fast);
        }
    }
}
