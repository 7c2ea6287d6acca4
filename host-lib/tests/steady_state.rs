//! The batched policies allocate nothing in the steady state: once an `Allocator` has run
//! a pool's quanta for a while, its buffers (the intervals, the selection's histogram
//! and scratch, the results) are reused. Counted by `allocation-counter`'s global
//! allocator (allocations and reallocations on this thread while a closure runs).

#![allow(clippy::unwrap_used)]

use fairshare::{Allocator, Alpha, Policy, PoolConfig};

/// Seeded demands around a fair share of 10: idle, moderate and bursty users, so that
/// every quantum has donors and borrowers and runs both selections.
fn demands(users: usize, quanta: usize) -> Vec<Vec<u64>> {
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    (0..quanta)
        .map(|_| (0..users).map(|_| [0, 3, 8, 12, 30, 60][(next() % 6) as usize] + next() % 3).collect())
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
            let mut granted = 0u64;
            let during = allocation_counter::measure(|| {
                for demand in &quanta {
                    granted += pool.allocate(demand).unwrap().iter().sum::<u64>();
                }
            })
            .count_total;
            assert_eq!(during, 0, "{policy} with {users} users: {during} allocations in {} quanta", quanta.len());
            // The quanta did hand out slices (the pool is not idle).
            assert!(granted > 0, "{policy} with {users} users granted nothing");
        }
    }
}
