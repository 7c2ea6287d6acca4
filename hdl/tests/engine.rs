//! The RustHDL engine against the software policies of `host-lib`.

#![allow(clippy::unwrap_used, missing_docs)]

mod common;

use common::{random_pool, random_quantum, software};
use fairshare_hdl::testbench::EngineSim;

#[test]
fn paper_example_on_the_engine() {
    let mut e = EngineSim::<4, 2>::new();
    e.write_credits(&[6, 6, 6]);
    assert_eq!(e.read_credits(3), vec![6, 6, 6]);
    let demands = [[3, 2, 1], [3, 0, 0], [0, 3, 0], [2, 2, 4], [2, 3, 5]];
    let allocs = [[3, 2, 1], [3, 0, 0], [0, 3, 0], [1, 1, 4], [1, 2, 3]];
    let credits = [[5, 6, 7], [4, 8, 9], [6, 7, 11], [7, 8, 9], [8, 8, 8]];
    for q in 0..5 {
        let r = e.quantum(0, 2, 1, &demands[q]).unwrap();
        assert_eq!(r.alloc, allocs[q], "quantum {q}");
        assert_eq!(r.credits, credits[q], "quantum {q}");
    }
    assert_eq!(e.read_credits(3), vec![8, 8, 8]);
}

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Random sequences of quanta (modes mixed, credits carried on the engine and in
/// software) on an engine of `P` lanes and `2^A` rows; returns the quanta checked.
fn random_against_software<const P: usize, const A: usize>(seed: u64, sequences: usize) -> usize {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let max_users = P << A;
    let mut checked = 0;
    for s in 0..sequences {
        let mut e = EngineSim::<P, A>::new();
        e.stall = s % 2 == 1;
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
            checked += 1;
        }
        assert_eq!(e.read_credits(n), credits, "credit port after sequence {s}");
    }
    checked
}

#[test]
fn random_quanta_match_software_4_lanes() {
    assert!(random_against_software::<4, 2>(1, 120) >= 700);
}

#[test]
fn random_quanta_match_software_1_lane_and_3_lanes() {
    let q = random_against_software::<1, 4>(2, 40) + random_against_software::<3, 2>(3, 40);
    assert!(q >= 480);
}

#[test]
fn bad_configurations_set_an_error_and_change_nothing() {
    use fairshare_hdl::engine::error_code;
    let mut e = EngineSim::<4, 2>::new();
    e.write_credits(&[5, 6, 7]);
    assert_eq!(e.quantum(0, 2, 1, &[]).unwrap_err().0 as u64, error_code::USERS);
    assert_eq!(e.quantum(0, 2, 1, &[1; 17]).unwrap_err().0 as u64, error_code::USERS);
    assert_eq!(e.quantum(0, 2, 3, &[1, 1, 1]).unwrap_err().0 as u64, error_code::GUARANTEED);
    assert_eq!(e.quantum(0, 2, 1, &[1, 0x8000_0000, 1]).unwrap_err().0 as u64, error_code::DEMAND);
    assert_eq!(e.quantum(1, 0x8000_0000, 1, &[1, 1, 1]).unwrap_err().0 as u64, error_code::CAPACITY);
    assert_eq!(e.quantum(0, 0x3000_0000, 0, &[1, 1, 1]).unwrap_err().0 as u64, error_code::CAPACITY);
    assert_eq!(e.read_credits(3), vec![5, 6, 7]);
    e.write_credits(&[0x7FFF_FFFF, 6, 7]);
    assert_eq!(e.quantum(0, 2, 1, &[0, 3, 3]).unwrap_err().0 as u64, error_code::CREDIT);
    assert_eq!(e.read_credits(3), vec![0x7FFF_FFFF, 6, 7]);
    // And it still works afterwards.
    e.write_credits(&[6, 6, 6]);
    assert_eq!(e.quantum(0, 2, 1, &[3, 2, 1]).unwrap().alloc, vec![3, 2, 1]);
}
