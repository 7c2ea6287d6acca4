//! What the engine tests share: the software oracle in the engine's units, and random
//! quanta shaped like real pools (equal shares, bursty demands).

#![allow(dead_code, clippy::unwrap_used)]

use rand::Rng;

/// The software result in the engine's units (see `fairshare_hdl::oracle`).
pub fn software(mode: u8, f: u32, g: u32, credits: &[u32], demand: &[u32]) -> (Vec<u32>, Vec<u32>) {
    let mode = fairshare_abi::Mode::from_word(mode as u32).expect("a mode the engine computes");
    fairshare_hdl::oracle::expected(mode, f, g, credits, demand).unwrap()
}

/// A random pool: (n, f, g, initial credits).
pub fn random_pool(rng: &mut impl Rng, max_users: usize) -> (usize, u32, u32, u32) {
    let n = match rng.gen_range(0..4) {
        0 => max_users,
        1 => rng.gen_range(1..=4.min(max_users)),
        _ => rng.gen_range(1..=max_users),
    };
    let f = rng.gen_range(1..=8u32);
    let g = match rng.gen_range(0..4) {
        0 => 0,
        1 => f,
        _ => rng.gen_range(0..=f),
    };
    let start = match rng.gen_range(0..4) {
        0 => 0,
        1 => rng.gen_range(0..4),
        2 => rng.gen_range(0..60),
        _ => 1_000_000,
    };
    (n, f, g, start)
}

/// A mode (Karma most often) and a demand vector.
pub fn random_quantum(rng: &mut impl Rng, n: usize, f: u32) -> (u8, Vec<u32>) {
    let mode = [0u8, 0, 0, 0, 1, 2][rng.gen_range(0..6)];
    let demand = (0..n)
        .map(|_| match rng.gen_range(0..6) {
            0 => 0,
            1 => rng.gen_range(0..=f),
            2 | 3 => rng.gen_range(0..=3 * f),
            4 => rng.gen_range(f..=8 * f),
            _ => rng.gen_range(0..1000),
        })
        .collect();
    (mode, demand)
}

/// The search passes of a quantum of `n` users on `p` lanes that took `cycles` (no
/// stalls), and whether the first was made of LOAD's counts, as
/// `fairshare_hdl::engine::cycles` (the formula of docs/engine.md) counts them; `None`
/// if no pass count fits.
pub fn passes_of(n: usize, p: usize, cycles: usize) -> Option<(usize, bool)> {
    (0..=fairshare_hdl::search::MAX_PASSES)
        .flat_map(|k| [(k, false), (k, true)])
        .find(|&(k, loaded)| fairshare_hdl::engine::cycles(n, p, k, loaded) == cycles)
}
