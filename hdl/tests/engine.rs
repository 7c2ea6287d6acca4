//! The RustHDL engine against the software policies of `host-lib`.

#![allow(clippy::unwrap_used, missing_docs)]

mod common;

use common::{passes_of, random_pool, random_quantum, software};
use fairshare_hdl::engine_sim::EngineSim;

/// The paper's worked example (`vectors/karma_paper.json`, figure 3) on the engine,
/// credits carried by the engine itself from quantum to quantum.
#[test]
fn paper_example_on_the_engine() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../vectors/karma_paper.json");
    let file = fairshare::vectors::VectorFile::parse(&std::fs::read_to_string(path).unwrap()).unwrap();
    let case = file.cases.iter().find(|c| c.name == "karma-paper-figure-3").unwrap();
    let (n, f, g) = (case.fair_share.len(), case.fair_share[0] as u32, case.guaranteed[0] as u32);
    let mut e = EngineSim::<4, 2>::new();
    e.write_credits(&vec![case.initial_credits as u32; n]);
    assert_eq!(e.read_credits(n), vec![case.initial_credits as u32; n]);
    let mismatches = case.check(|_, demand, _| {
        let d: Vec<u32> = demand.iter().map(|&x| x as u32).collect();
        let r = e.quantum(0, f, g, &d).map_err(|err| format!("engine error {}", err.0))?;
        let credits = r.credits.iter().map(|&c| fairshare::Credits::from_int(c as i64).unwrap()).collect();
        Ok::<_, String>(fairshare::Outcome { alloc: r.alloc.iter().map(|&a| a as u64).collect(), credits })
    });
    assert!(mismatches.is_empty(), "{mismatches:?}");
    assert_eq!(case.quanta.len(), 5);
}

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Random sequences of quanta (modes mixed, credits carried on the engine and in
/// software, every other sequence with random stalls on both streams) on an engine of
/// `P` lanes and `2^A` rows; returns how many unstalled quanta ran a threshold search,
/// and how many of those took their first pass from LOAD's counts.
fn random_against_software<const P: usize, const A: usize>(seed: u64, sequences: usize) -> (usize, usize) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let max_users = P << A;
    let (mut checked, mut loaded) = (0, 0);
    for s in 0..sequences {
        let mut e = EngineSim::<P, A>::new();
        e.stall_seed = if s % 2 == 1 { seed * 1_000_003 + s as u64 } else { 0 };
        let (n, f, g, start) = random_pool(&mut rng, max_users);
        let mut credits: Vec<u32> = (0..n).map(|_| start).collect();
        e.write_credits(&credits);
        for q in 0..6 {
            let (mode, demand) = random_quantum(&mut rng, n, f);
            let (alloc, after) = software(mode, f, g, &credits, &demand);
            let got =
                e.quantum(mode, f, g, &demand).unwrap_or_else(|err| panic!("seq {s} q {q}: engine error {err:?}"));
            let ctx =
                format!("seq {s} quantum {q} mode {mode} n {n} f {f} g {g} credits {credits:?} demand {demand:?}");
            assert_eq!(got.alloc, alloc, "alloc, {ctx}");
            assert_eq!(got.credits, after, "credits, {ctx}");
            credits = after;
            if e.stall_seed == 0 {
                // The formula of docs/engine.md, exactly, for some number of passes.
                let passes = passes_of(n, P, got.cycles as usize);
                let (k, first_loaded) = passes
                    .unwrap_or_else(|| panic!("{} cycles fit no pass count of engine::cycles, {ctx}", got.cycles));
                checked += usize::from(k > 0);
                loaded += usize::from(first_loaded);
            }
        }
        assert_eq!(e.read_credits(n), credits, "credit port after sequence {s}");
    }
    (checked, loaded)
}

#[test]
fn random_quanta_match_software_4_lanes() {
    // 720 quanta; the counts are of those that exercised the search and its first pass
    // from LOAD's counts (coverage).
    let (searched, loaded) = random_against_software::<4, 2>(1, 120);
    assert!(searched >= 50, "only {searched} quanta ran a threshold search");
    // 62 of 117 in this run (seed 1): the first pass from LOAD's counts is common.
    assert!(loaded >= 20, "only {loaded} of {searched} searches took their first pass from LOAD's counts");
}

#[test]
fn random_quanta_match_software_1_lane_and_3_lanes() {
    let ((s1, l1), (s3, l3)) = (random_against_software::<1, 4>(2, 40), random_against_software::<3, 2>(3, 40));
    assert!(s1 + s3 >= 30, "only {} quanta ran a threshold search", s1 + s3);
    // 100 of 189 in this run.
    assert!(l1 + l3 >= 30, "only {} of {} searches took their first pass from LOAD's counts", l1 + l3, s1 + s3);
}

#[test]
fn bad_configurations_set_an_error_and_change_nothing() {
    use fairshare_hdl::engine::error_code;
    let mut e = EngineSim::<4, 2>::new();
    e.write_credits(&[5, 6, 7]);
    assert_eq!(e.quantum(0, 2, 1, &[]).unwrap_err().0, error_code::USERS);
    assert_eq!(e.quantum(0, 2, 1, &[1; 17]).unwrap_err().0, error_code::USERS);
    assert_eq!(e.quantum(0, 2, 3, &[1, 1, 1]).unwrap_err().0, error_code::GUARANTEED);
    assert_eq!(e.quantum(0, 2, 1, &[1, 0x8000_0000, 1]).unwrap_err().0, error_code::DEMAND);
    assert_eq!(e.quantum(1, 0x8000_0000, 1, &[1, 1, 1]).unwrap_err().0, error_code::CAPACITY);
    assert_eq!(e.quantum(0, 0x3000_0000, 0, &[1, 1, 1]).unwrap_err().0, error_code::CAPACITY);
    // A fair share of 0 (the register's reset value) is no pool: the software refuses it too.
    assert_eq!(e.quantum(2, 0, 0, &[1, 1, 1]).unwrap_err().0, error_code::CAPACITY);
    assert_eq!(e.read_credits(3), vec![5, 6, 7]);
    e.write_credits(&[0x7FFF_FFFF, 6, 7]);
    assert_eq!(e.quantum(0, 2, 1, &[0, 3, 3]).unwrap_err().0, error_code::CREDIT);
    assert_eq!(e.read_credits(3), vec![0x7FFF_FFFF, 6, 7]);
    // A stored balance near 2^32 would wrap when the free credits are added: refused.
    e.write_credits(&[0xFFFF_FFFF, 6, 7]);
    assert_eq!(e.quantum(0, 2, 1, &[2, 0, 0]).unwrap_err().0, error_code::CREDIT);
    assert_eq!(e.read_credits(3), vec![0xFFFF_FFFF, 6, 7]);
    assert_eq!(e.quantum(3, 2, 1, &[1, 1, 1]).unwrap_err().0, error_code::MODE);
    // And it still works afterwards.
    e.write_credits(&[6, 6, 6]);
    assert_eq!(e.quantum(0, 2, 1, &[3, 2, 1]).unwrap().alloc, vec![3, 2, 1]);
}

/// Values near the data path's limits: shares of 2^26, demands up to 2^31 - 1, credits
/// near 2^30, for every mode; and a borrower just below 2^31 (no false alarm: it only
/// loses credits).
#[test]
fn near_the_32_bit_limits() {
    use rand::Rng;
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let (f, g) = (1u32 << 26, 1u32 << 25);
    for s in 0..30 {
        let mut e = EngineSim::<4, 2>::new();
        let n = rng.gen_range(1..=16usize);
        let mut credits: Vec<u32> = (0..n).map(|_| rng.gen_range((1 << 30) - 1000..(1 << 30))).collect();
        e.write_credits(&credits);
        for q in 0..4 {
            let mode = [0u8, 0, 1, 2][rng.gen_range(0..4)];
            let demand: Vec<u32> = (0..n)
                .map(|_| match rng.gen_range(0..3) {
                    0 => rng.gen_range(0..g),
                    1 => rng.gen_range(g..(1 << 31)),
                    _ => (1 << 31) - 1,
                })
                .collect();
            let (alloc, after) = software(mode, f, g, &credits, &demand);
            let got = e.quantum(mode, f, g, &demand).unwrap_or_else(|err| panic!("seq {s} q {q}: {err:?}"));
            assert_eq!((got.alloc, got.credits.clone()), (alloc, after.clone()), "seq {s} q {q} mode {mode}");
            credits = after;
        }
    }
    let mut e = EngineSim::<4, 2>::new();
    e.write_credits(&[(1 << 31) - 10, 5]);
    let (alloc, after) = software(0, 4, 2, &[(1 << 31) - 10, 5], &[1_000, 0]);
    let got = e.quantum(0, 4, 2, &[1_000, 0]).unwrap();
    assert_eq!((got.alloc, got.credits), (alloc, after));
}

/// The RTL implements the ABI's admission rule exactly: the software model (the rule,
/// `fairshare_abi::admit`, then the oracle) answers as the RTL does, refusals and their
/// status codes included: random configurations with edge values (too many users, g
/// above f, words at 2^31, balances near 2^31, mode 3).
#[test]
fn software_model_matches_the_engine_including_refusals() {
    use fairshare_abi::{Accelerator, DeviceError};
    use fairshare_hdl::catalog::SoftwareEngine;
    use rand::Rng;
    let mut rng = ChaCha8Rng::seed_from_u64(99);
    let (mut refused, mut served) = (0, 0);
    for case in 0..300 {
        let mut rtl = EngineSim::<4, 2>::new();
        let mut sw = SoftwareEngine::new(4, 16);
        let n = rng.gen_range(0..=17usize);
        let edge = |rng: &mut ChaCha8Rng, small: u32| match rng.gen_range(0..40) {
            0 => 0x7FFF_FFFF,
            1 => 0x8000_0000,
            2 => 0x7FFF_FFF0,
            _ => rng.gen_range(0..=small),
        };
        let f = edge(&mut rng, 8);
        let g = if rng.gen_range(0..10) == 0 { f.saturating_add(1) } else { rng.gen_range(0..=f.min(8)) };
        let mode = [0u8, 0, 0, 1, 2, 3][rng.gen_range(0..6)];
        let credits: Vec<u32> = (0..n).map(|_| edge(&mut rng, 50)).collect();
        let demand: Vec<u32> = (0..n).map(|_| edge(&mut rng, 20)).collect();
        let held = n.min(16); // 17 users: refused, and only 16 balances exist
        rtl.write_credits(&credits[..held]);
        Accelerator::write_credits(&mut sw, &credits[..held]).unwrap();
        let a = rtl.quantum(mode, f, g, &demand).map(|r| (r.alloc, r.credits)).map_err(|e| e.0);
        let b = sw.quantum_word(mode as u32, f, g, &demand).map(|r| (r.alloc, r.credits)).map_err(|e| match e {
            DeviceError::Refused { code } => code,
            other => panic!("case {case}: the model answers with a status code, not {other}"),
        });
        assert_eq!(a, b, "case {case}: mode {mode} n {n} f {f} g {g} credits {credits:?} demand {demand:?}");
        assert_eq!(
            rtl.read_credits(held),
            Accelerator::read_credits(&mut sw, held).unwrap(),
            "case {case}: credits after"
        );
        if a.is_err() {
            refused += 1
        } else {
            served += 1
        }
    }
    assert!(refused >= 50 && served >= 50, "refused {refused}, served {served}");
}
