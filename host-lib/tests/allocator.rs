//! The `Allocator` API: the paper's worked example through the public API, users
//! joining and leaving, state export/import, and errors that leave the state unchanged.

#![allow(clippy::unwrap_used)]

use fairshare::{
    Allocator, AllocatorState, Alpha, Credits, Error, Implementation, Policy, PoolChange, PoolConfig, UserConfig,
};

fn paper_pool(policy: Policy) -> Allocator {
    Allocator::new(PoolConfig::equal(3, 2, Alpha::new(1, 2).unwrap(), 6).unwrap(), policy).unwrap()
}

fn whole(credits: &[Credits]) -> Vec<i64> {
    credits
        .iter()
        .map(|c| {
            assert!(c.is_integer(), "{c} is not whole");
            c.floor_int()
        })
        .collect()
}

/// docs/spec/karma.md, "Worked example": the table as written there.
#[test]
fn paper_worked_example_through_the_api() {
    let demands = [[3, 2, 1], [3, 0, 0], [0, 3, 0], [2, 2, 4], [2, 3, 5]];
    let karma = [[3, 2, 1], [3, 0, 0], [0, 3, 0], [1, 1, 4], [1, 2, 3]];
    let credits = [[5, 6, 7], [4, 8, 9], [6, 7, 11], [7, 8, 9], [8, 8, 8]];
    let maxmin = [[3, 2, 1], [3, 0, 0], [0, 3, 0], [2, 2, 2], [2, 2, 2]];
    for imp in Implementation::ALL {
        let mut k = paper_pool(Policy::Karma).with_implementation(imp);
        let mut m = paper_pool(Policy::MaxMin).with_implementation(imp);
        for q in 0..5 {
            assert_eq!(k.allocate(&demands[q]).unwrap(), &karma[q]);
            assert_eq!(whole(k.credits()), credits[q]);
            assert_eq!(m.allocate(&demands[q]).unwrap(), &maxmin[q]);
        }
        assert_eq!(k.quantum(), 5);
    }
}

#[test]
fn errors_change_nothing() {
    let mut pool = paper_pool(Policy::Karma);
    pool.allocate(&[3, 2, 1]).unwrap();
    let before = pool.export_state();
    assert_eq!(pool.allocate(&[1, 2]), Err(Error::DemandLength { expected: 3, got: 2 }));
    assert_eq!(pool.export_state(), before);
    assert_eq!(pool.allocations(), &[3, 2, 1]);
    assert!(matches!(
        pool.join(UserConfig::with_alpha("u1", 2, Alpha::ONE, Credits::ZERO), PoolChange::Resize),
        Err(Error::DuplicateUser(_))
    ));
    assert!(matches!(pool.leave("nobody", PoolChange::Resize), Err(Error::UnknownUser(_))));
    // A rescale that would leave a user with no share is refused as a whole.
    assert!(matches!(
        pool.join(UserConfig::with_alpha("big", 1_000, Alpha::ONE, Credits::ZERO), PoolChange::KeepPool),
        Err(Error::ZeroFairShare { .. })
    ));
    assert_eq!(pool.export_state(), before);
}

#[test]
fn credit_overflow_is_reported_not_wrapped() {
    let near_max = Credits::from_raw(i64::MAX - 100);
    let users = vec![
        UserConfig { name: "rich".into(), fair_share: 2, guaranteed: 1, initial_credits: near_max },
        UserConfig { name: "b".into(), fair_share: 2, guaranteed: 1, initial_credits: Credits::ZERO },
    ];
    for imp in Implementation::ALL {
        let mut pool =
            Allocator::new(PoolConfig { users: users.clone() }, Policy::Karma).unwrap().with_implementation(imp);
        let before = pool.export_state();
        // Free credits alone (1 per quantum) push `rich` past the range.
        assert_eq!(pool.allocate(&[0, 5]), Err(Error::CreditOverflow { user: 0, before: near_max }));
        assert_eq!(pool.export_state(), before);
    }
}

#[test]
fn join_starts_at_floor_of_mean_credits_and_resizes_or_keeps_the_pool() {
    let mut pool = paper_pool(Policy::Karma);
    pool.allocate(&[3, 2, 1]).unwrap(); // credits 5, 6, 7
    pool.allocate(&[3, 0, 0]).unwrap(); // credits 4, 8, 9 -> mean 7
    let mut grow = pool.clone();
    let i = grow
        .join(UserConfig::with_alpha("d", 2, Alpha::new(1, 2).unwrap(), Credits::ZERO), PoolChange::Resize)
        .unwrap();
    assert_eq!(i, 3);
    assert_eq!(whole(grow.credits()), vec![4, 8, 9, 7]);
    assert_eq!(grow.params().capacity, 8);
    assert_eq!(grow.allocations(), &[3, 0, 0, 0], "the newcomer has no allocation yet");
    assert_eq!(grow.allocate(&[0, 0, 0, 8]).unwrap(), &[0, 0, 0, 8]);

    let mut keep = pool.clone();
    keep.join(UserConfig::with_alpha("d", 2, Alpha::new(1, 2).unwrap(), Credits::ZERO), PoolChange::KeepPool).unwrap();
    // C = 6 stays: quotas 2 * 6 / 8 = 1.5 each; the two slices left go to the lowest
    // indices (equal remainders); guaranteed floor(1 * f' / 2).
    assert_eq!(
        keep.users().iter().map(|u| (u.fair_share, u.guaranteed)).collect::<Vec<_>>(),
        vec![(2, 1), (2, 1), (1, 0), (1, 0)]
    );
    assert_eq!(keep.params().capacity, 6);
    // 100 users of 10 and a newcomer of 10 under KeepPool: still 1,000 slices, 91 users
    // keep 10 and 10 get 9 (quota 9.90099 each; 91 slices of remainder).
    let mut big = Allocator::new(PoolConfig::equal(100, 10, Alpha::ONE, 5).unwrap(), Policy::Karma).unwrap();
    big.join(UserConfig::with_alpha("new", 10, Alpha::ONE, Credits::ZERO), PoolChange::KeepPool).unwrap();
    assert_eq!(big.params().capacity, 1_000);
    let tens = big.users().iter().filter(|u| u.fair_share == 10).count();
    assert_eq!((tens, big.users().len() - tens), (91, 10));
    assert!(big.users()[..91].iter().all(|u| u.fair_share == 10), "the lowest indices keep the extra slice");

    // A mean with a fraction rounds down (floor, also for negative means).
    let mut odd = paper_pool(Policy::Karma);
    odd.allocate(&[3, 2, 1]).unwrap(); // 5 + 6 + 7 = 18 -> 6
    odd.allocate(&[0, 0, 4]).unwrap(); // 7, 8, 5 -> 20 / 3 -> 6
    odd.join(UserConfig::with_alpha("x", 2, Alpha::ONE, Credits::ZERO), PoolChange::Resize).unwrap();
    assert_eq!(whole(odd.credits())[3], 6);
}

#[test]
fn leave_drops_credits_and_keeps_the_others() {
    let mut pool = paper_pool(Policy::Karma);
    pool.allocate(&[3, 2, 1]).unwrap(); // 5, 6, 7
    let mut shrink = pool.clone();
    shrink.leave("u1", PoolChange::Resize).unwrap();
    assert_eq!(whole(shrink.credits()), vec![5, 7]);
    assert_eq!(shrink.allocations(), &[3, 1], "the others keep their last allocations");
    assert_eq!(shrink.users().iter().map(|u| u.name.as_str()).collect::<Vec<_>>(), vec!["u0", "u2"]);
    assert_eq!(shrink.params().capacity, 4);
    let mut keep = pool.clone();
    keep.leave("u1", PoolChange::KeepPool).unwrap();
    assert_eq!(keep.params().capacity, 6); // shares 3, 3; guaranteed floor(1 * 3 / 2) = 1
    assert_eq!(keep.params().guaranteed, vec![1, 1]);
    let mut last = Allocator::new(PoolConfig::equal(1, 1, Alpha::ONE, 0).unwrap(), Policy::Karma).unwrap();
    assert_eq!(last.leave("u0", PoolChange::Resize), Err(Error::LastUser));
}

#[test]
fn weights_divide_by_largest_remainder() {
    use fairshare::allocator::largest_remainder;
    assert_eq!(largest_remainder(10, &[1, 1, 1]), [4, 3, 3]);
    assert_eq!(largest_remainder(10, &[2, 1, 1]), [5, 3, 2]);
    assert_eq!(largest_remainder(7, &[1, 2]), [2, 5]);
    assert_eq!(largest_remainder(3, &[0, 0]), [0, 0]);
    for (s, w) in [(100u64, vec![3u64, 5, 7, 11]), (5, vec![1, 1, 1, 1, 1, 1])] {
        assert_eq!(largest_remainder(s, &w).iter().sum::<u64>(), s);
    }
}

#[test]
fn set_shares_changes_shares_and_keeps_credits_or_changes_nothing() {
    let mut pool = paper_pool(Policy::Karma);
    pool.allocate(&[3, 2, 1]).unwrap(); // credits 5, 6, 7
    pool.set_shares(&[(1, 0), (2, 1), (3, 1)]).unwrap();
    assert_eq!(pool.params().fair_share, vec![1, 2, 3]);
    assert_eq!(pool.params().guaranteed, vec![0, 1, 1]);
    assert_eq!(pool.params().capacity, 6);
    assert_eq!(whole(pool.credits()), vec![5, 6, 7]);
    let before = pool.export_state();
    assert_eq!(pool.set_shares(&[(1, 0)]), Err(Error::SharesLength { expected: 3, got: 1 }));
    assert!(matches!(pool.set_shares(&[(1, 0), (0, 0), (3, 1)]), Err(Error::ZeroFairShare { user: 1, .. })));
    assert_eq!(pool.export_state(), before, "a refused change changes nothing");
}

#[test]
fn exported_state_continues_identically_and_survives_json() {
    let cfg = PoolConfig {
        users: vec![
            UserConfig {
                name: "a".into(),
                fair_share: 1,
                guaranteed: 0,
                initial_credits: Credits::from_int(3).unwrap(),
            },
            UserConfig {
                name: "b".into(),
                fair_share: 4,
                guaranteed: 1,
                initial_credits: Credits::from_int(3).unwrap(),
            },
            UserConfig {
                name: "c".into(),
                fair_share: 3,
                guaranteed: 2,
                initial_credits: Credits::from_int(3).unwrap(),
            },
        ],
    };
    let demands = [[5, 0, 9], [0, 9, 1], [3, 3, 3], [9, 9, 0], [1, 7, 2], [4, 0, 8]];
    let mut straight = Allocator::new(cfg.clone(), Policy::Karma).unwrap();
    let mut first = Allocator::new(cfg, Policy::Karma).unwrap();
    for d in &demands[..3] {
        straight.allocate(d).unwrap();
        first.allocate(d).unwrap();
    }
    let json = serde_json::to_string(&first.export_state()).unwrap();
    assert!(first.credits().iter().any(|c| !c.is_integer()), "weighted credits should be fractional here: {json}");
    let state: AllocatorState = serde_json::from_str(&json).unwrap();
    let mut resumed = Allocator::from_state(state).unwrap();
    assert_eq!(resumed.quantum(), 3);
    assert_eq!(resumed.allocations(), first.allocations());
    assert_eq!(resumed.credits(), first.credits());
    for d in &demands[3..] {
        assert_eq!(resumed.allocate(d).unwrap(), straight.allocate(d).unwrap());
        assert_eq!(resumed.credits(), straight.credits());
    }
    let mut bad: AllocatorState = serde_json::from_str(&json).unwrap();
    bad.users[1].guaranteed = 99;
    assert!(matches!(Allocator::from_state(bad), Err(Error::GuaranteedAboveFair { user: 1, .. })));
    assert!(serde_json::from_str::<AllocatorState>(&json.replace("\"credits\":\"", "\"credits\":\"x")).is_err());
}
