//! The radix selection of the batched policies against the literal loops, on 10,000
//! random instances per property: credits all equal, negative, spread over the whole
//! credit range (several selection levels), at the top of the range (both fail alike),
//! fractional (the binary-search path), a single user, equal and unequal shares. One
//! workspace serves every instance, so buffers left from one quantum cannot leak into
//! the next.

#![allow(clippy::unwrap_used)]

use fairshare::policy::{karma, maxmin, Outcome, Workspace};
use fairshare::{Credits, KarmaParams, PoolConfig, UserConfig};
use proptest::collection::vec;
use proptest::prelude::*;
use std::cell::RefCell;

const TOP: i64 = i64::MAX >> 16; // the largest whole balance
const BOTTOM: i64 = i64::MIN >> 16; // the smallest whole balance

fn config() -> ProptestConfig {
    ProptestConfig { cases: 10_000, max_shrink_iters: 2_000, ..ProptestConfig::default() }
}

/// Whole credits (raw units) for `n` users, by kind.
fn credits(n: usize) -> BoxedStrategy<Vec<i64>> {
    let whole = |v: Vec<i64>| v.into_iter().map(|c| c << 16).collect::<Vec<_>>();
    prop_oneof![
        2 => (-3..=6i64).prop_map(move |c| whole(vec![c; n])),
        3 => vec(-5..=20i64, n).prop_map(whole),
        1 => vec(-1_000_000..=-1i64, n).prop_map(whole),
        2 => vec(prop_oneof![Just(BOTTOM + 10), Just(TOP - 10), -1_000..=1_000i64, BOTTOM + 10..=TOP - 10], n)
            .prop_map(whole),
        1 => vec(TOP - 40..=TOP - 5, n).prop_map(whole),
        1 => vec(-300_000..=300_000i64, n),
    ]
    .boxed()
}

/// A pool of `n` users: equal shares (most often) or unequal ones, and any `g <= f`.
fn pool(n: usize) -> BoxedStrategy<PoolConfig> {
    let shares = prop_oneof![3 => (1..=12u64).prop_map(move |f| vec![f; n]), 1 => vec(1..=12u64, n)];
    (shares, 0..=4u64, vec(0..=12u64, n))
        .prop_map(|(f, mode, g)| PoolConfig {
            users: f
                .iter()
                .zip(g)
                .enumerate()
                .map(|(i, (&f, g))| UserConfig {
                    name: format!("u{i}"),
                    fair_share: f,
                    guaranteed: match mode {
                        0 => 0,
                        1 => f,
                        2 => f / 2,
                        _ => g % (f + 1),
                    },
                    initial_credits: Credits::ZERO,
                })
                .collect(),
        })
        .boxed()
}

/// `(pool, demands, credits before)` with 1 to 40 users (one user in a tenth).
fn instance() -> impl Strategy<Value = (PoolConfig, Vec<u64>, Vec<i64>)> {
    prop_oneof![1 => Just(1usize), 9 => 1..=40usize]
        .prop_flat_map(|n| (pool(n), vec(prop_oneof![3 => 0..=30u64, 1 => Just(0u64), 1 => 0..=400u64], n), credits(n)))
}

thread_local! {
    static WORKSPACE: RefCell<(Workspace, Outcome)> = RefCell::new(Default::default());
}

proptest! {
    #![proptest_config(config())]

    /// Batched Karma (radix selection, or the search for the quanta it does not cover)
    /// equals the literal loop bit for bit: allocations, credits and errors.
    #[test]
    fn karma_radix_selection_equals_literal((cfg, demand, raw) in instance()) {
        let p = KarmaParams::from_config(&cfg).unwrap();
        let before: Vec<Credits> = raw.iter().map(|&r| Credits::from_raw(r)).collect();
        let literal = karma::literal(&p, &demand, &before);
        let batched = WORKSPACE.with(|w| {
            let (workspace, out) = &mut *w.borrow_mut();
            karma::batched_into(workspace, &p, &demand, &before, out).map(|()| out.clone())
        });
        prop_assert_eq!(&batched, &literal);
        prop_assert_eq!(&karma::search(&p, &demand, &before), &literal);
    }

    /// Max-min by radix selection equals progressive filling, demands up to 2^40.
    #[test]
    fn maxmin_radix_selection_equals_literal(
        (cfg, demand, _) in instance(),
        scale in prop_oneof![Just(1u64), Just(1 << 20), Just(1 << 34)],
    ) {
        let p = KarmaParams::from_config(&cfg).unwrap();
        let demand: Vec<u64> = demand.iter().map(|&d| d * scale).collect();
        let capacity = p.capacity * scale;
        let batched = WORKSPACE.with(|w| {
            let (workspace, out) = &mut *w.borrow_mut();
            maxmin::batched_into(workspace, &p.fair_share, capacity, &demand, &mut out.alloc);
            out.alloc.clone()
        });
        // Progressive filling is O(level): check the small scale against it, and every
        // scale against the binary search (itself checked by the property tests).
        if scale == 1 {
            prop_assert_eq!(&batched, &maxmin::literal(&p.fair_share, capacity, &demand));
        }
        prop_assert_eq!(&batched, &maxmin::search(&p.fair_share, capacity, &demand));
    }
}
