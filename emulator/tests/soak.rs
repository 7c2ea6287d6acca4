//! The soak test.
//! Quanta through the emulator path in every verification mode, in segments of a fresh
//! emulator each with one random injected fault at a random quantum (some segments end
//! before theirs fires); after a fault the pool goes on in software, and the next
//! segment puts it on a fresh device again from its credits.
//!
//! - `corrupt`, `wrong-seq` and `crash`, in every mode (`sync`, `async`, `sample:8`,
//!   `invariants`): every fault that fires is detected at the quantum it hit, no wrong
//!   allocation is ever issued (every quantum equals the software's), and the credits
//!   equal the software run's throughout.
//! - `swap` (a wrong result that keeps every invariant), in `sync` and `async`: every
//!   swap is found by the exact recomputation at the quantum it hit; `sync` issues no
//!   wrong allocation, `async` at most the quanta between the swap and its detection;
//!   after the fallback the credits equal the software run's.
//!
//! The process's resident memory must stay flat (within 10% after warm-up).
//!
//! Every `./test.sh` runs 10^5 quanta per mode (`FAIRSHARE_SOAK_QUANTA` changes it).

#![allow(clippy::unwrap_used, missing_docs)]

use std::time::Duration;

use fairshare::offload::{Offload, Verify};
use fairshare::{Allocator, Alpha, Policy, PoolConfig};
use fairshare_emulator::{Fault, FaultKind, InProcess, Model};

/// Resident memory of this process, in kB.
fn rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap()
        .parse()
        .unwrap()
}

/// What a soak saw.
#[derive(Debug, Default)]
struct Seen {
    quanta: usize,
    on_device: u64,
    /// Loud faults that fired (the emulator served the quantum they were set for).
    fired: usize,
    /// Of those, the ones the pool fell back for, at the quantum they hit.
    detected: usize,
    /// Swaps the pool fell back for, at the quantum they hit. (A swap applies only where
    /// a pair of users allows it; one that applied and was missed leaves credits unlike
    /// the software's, which the segment's check refuses.)
    swaps_found: usize,
    /// Quanta whose allocation differed from the software's.
    wrong_allocations: u64,
}

fn soak(verify: Verify, kinds: &[&str], total: usize, seed: u64) -> Seen {
    let (users, segment) = (40, 2_000usize);
    let dir = tempfile::tempdir().unwrap();
    let config = PoolConfig::equal(users, 10, Alpha::new(1, 2).unwrap(), 100).unwrap();
    let mut reference = Allocator::new(config.clone(), Policy::Karma).unwrap();
    // The pool's state carried from segment to segment.
    let mut carried = Allocator::new(config, Policy::Karma).unwrap();
    let demands = fairshare_sim::workload::bursty(users, segment, 10, 11);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15 ^ seed;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut seen = Seen::default();
    let (mut baseline, mut s) = (None, 0);
    while seen.quanta < total {
        let fault: Fault =
            format!("{}@{}", kinds[(next() % kinds.len() as u64) as usize], 1 + next() % (segment as u64 * 2))
                .parse()
                .unwrap();
        let path = dir.path().join(format!("soak-{s}.shm"));
        s += 1;
        let emu = InProcess::start(&path, users, 8, Model::Software, vec![fault]).unwrap();
        let mut dev = fairshare_driver::shm::open(&path).unwrap();
        dev.timeout = Duration::from_millis(200);
        let start = carried.quantum();
        let mut pool = Offload::new(carried, Box::new(dev), verify);
        assert!(pool.on_device(), "{verify}: {:?}", pool.fallback());
        let offset = (next() % segment as u64) as usize;
        let quanta = segment.min(total - seen.quanta);
        for q in 0..quanta {
            let d = &demands[(q + offset) % segment];
            let got = pool.allocate(d).unwrap().to_vec();
            seen.wrong_allocations += u64::from(got != reference.allocate(d).unwrap());
        }
        pool.settle();
        let at = start + fault.at - 1;
        let fired = (fault.at as usize) <= quanta;
        let swap = fault.kind == FaultKind::Swap;
        seen.fired += usize::from(fired && !swap);
        match pool.fallback() {
            Some(fb) => {
                assert!(fired, "{verify}: a fallback without a fault: {fb}");
                assert_eq!(fb.quantum, at, "{verify}: {fault:?} detected at the quantum it hit: {fb}");
                if swap {
                    seen.swaps_found += 1;
                } else {
                    seen.detected += 1;
                }
            }
            // A swap fires only where a pair of users allows it.
            None => assert!(!fired || fault.kind == FaultKind::Swap, "{verify}: {fault:?} fired and was not seen"),
        }
        assert_eq!(pool.allocator().credits(), reference.credits(), "{verify}: credits equal the software run's");
        assert_eq!(pool.allocator().quantum(), reference.quantum());
        seen.quanta += quanta;
        seen.on_device += pool.device_quanta();
        carried = pool.allocator().clone();
        drop(pool);
        let _ = emu.stop();
        // Memory after the first fifth is the baseline; it must stay within 10%.
        let rss = rss_kb();
        if seen.quanta >= total / 5 {
            let base = *baseline.get_or_insert(rss);
            assert!(rss * 10 <= base * 11 + 2048, "RSS grew from {base} kB to {rss} kB after {} quanta", seen.quanta);
        }
    }
    eprintln!("soak {verify} {kinds:?}: {seen:?}");
    assert_eq!(seen.detected, seen.fired, "{verify}: every loud fault that fired is detected: {seen:?}");
    assert!(seen.fired + seen.swaps_found > 0, "{verify}: no fault fired: {seen:?}");
    assert!(seen.on_device as usize > seen.quanta / 4, "{verify}: only {} quanta on the device", seen.on_device);
    seen
}

fn total() -> usize {
    std::env::var("FAIRSHARE_SOAK_QUANTA").ok().and_then(|v| v.parse().ok()).unwrap_or(100_000)
}

#[test]
fn soak_every_verify_mode_with_loud_faults() {
    for (i, verify) in [Verify::Sync, Verify::Async, Verify::Sample(8), Verify::Invariants].into_iter().enumerate() {
        let seen = soak(verify, &["corrupt", "corrupt", "wrong-seq", "crash"], total(), i as u64);
        assert_eq!(seen.wrong_allocations, 0, "{verify}: a faulty result was issued");
    }
}

#[test]
fn a_wrong_result_that_keeps_the_invariants_is_found_by_sync_and_async() {
    let sync = soak(Verify::Sync, &["swap"], total() / 4, 7);
    assert_eq!(sync.wrong_allocations, 0, "sync issues no wrong allocation");
    assert!(sync.swaps_found > 0, "{sync:?}");
    let asynchronous = soak(Verify::Async, &["swap"], total() / 4, 8);
    // Async issues the device's results until the verifier reports: at most the depth of
    // its queue plus one per swap.
    let bound = (asynchronous.swaps_found * (fairshare::offload::VERIFIER_DEPTH + 2)) as u64;
    assert!(asynchronous.swaps_found > 0 && asynchronous.wrong_allocations <= bound, "{asynchronous:?}");
    // Each swap found was issued first: async uses a result before it is checked.
    assert!(asynchronous.wrong_allocations >= asynchronous.swaps_found as u64, "{asynchronous:?}");
}
