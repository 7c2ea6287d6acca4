//! The batched policies allocate nothing in the steady state: once an `Allocator` has run
//! a pool's quanta for a while, its buffers (the intervals, the selection's histogram
//! and scratch, the results) are reused. Counted by `allocation-counter`'s global
//! allocator (allocations and reallocations on this thread while a closure runs).

#![allow(clippy::unwrap_used)]

use fairshare::{Allocator, Alpha, Policy, PoolConfig};

/// Seeded demands around a fair share of 10 (guaranteed share 5), alternating two kinds
/// of quanta so that both of Karma's selections run: a busy mix (idle, moderate and
/// bursty users; borrowers want more than is lent, so the borrowers' threshold is
/// searched) and a quiet one (nine users in ten idle, the rest asking for 20; more is
/// lent than borrowed, so the donors' threshold is searched).
fn demands(users: usize, quanta: usize) -> Vec<Vec<u64>> {
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    (0..quanta)
        .map(|q| {
            (0..users)
                .map(|_| match q % 2 {
                    0 => [0, 3, 8, 12, 30, 60][(next() % 6) as usize] + next() % 3,
                    _ if next() % 10 == 0 => 20 + next() % 3,
                    _ => 0,
                })
                .collect()
        })
        .collect()
}

#[test]
fn batched_policies_allocate_nothing_in_the_steady_state() {
    // The counter sees an allocation (so a count of 0 below means something).
    let probe = allocation_counter::measure(|| drop(std::hint::black_box(vec![1u8; 10])));
    assert!(probe.count_total > 0, "the counter counts nothing");
    for users in [10, 1_000, 50_000] {
        let quanta = demands(users, 40);
        for policy in Policy::ALL {
            let config = PoolConfig::equal(users, 10, Alpha::new(1, 2).unwrap(), 100).unwrap();
            let mut pool = Allocator::new(config, policy).unwrap();
            // Warm-up: the buffers grow to what this pool's quanta need.
            for _ in 0..3 {
                for demand in &quanta {
                    pool.allocate(demand).unwrap();
                }
            }
            let mut above_guaranteed = 0usize;
            let during = allocation_counter::measure(|| {
                for demand in &quanta {
                    above_guaranteed += pool.allocate(demand).unwrap().iter().filter(|&&a| a > 5).count();
                }
            })
            .count_total;
            assert_eq!(during, 0, "{policy} with {users} users: {during} allocations in {} quanta", quanta.len());
            // Some users got more than the guaranteed share (the quanta were not trivial).
            assert!(above_guaranteed > 0, "{policy} with {users} users: nobody above the guaranteed share");
        }
    }
}
