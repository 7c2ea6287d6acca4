//! What the engine tests share: the software oracle in the engine's units, and random
//! quanta shaped like real pools (equal shares, bursty demands).

#![allow(dead_code, clippy::unwrap_used)]

use fairshare::policy::{karma, maxmin, strict};
use fairshare::{Alpha, Credits, KarmaParams, PoolConfig};
use rand::Rng;

/// One quantum in the host library (`mode` 0 Karma, 1 max-min, 2 strict) with equal
/// shares `f`, `g`, whole credits: (allocations, credits after), converted to the
/// engine's 32-bit words only where they fit (a value that does not is a test failure,
/// never a silent truncation).
pub fn software(mode: u8, f: u32, g: u32, credits: &[u32], demand: &[u32]) -> (Vec<u32>, Vec<u32>) {
    let n = demand.len();
    let cfg = PoolConfig::equal(n, f as u64, Alpha::new(g as u64, f as u64).unwrap(), 0).unwrap();
    let p = KarmaParams::from_config(&cfg).unwrap();
    assert_eq!(p.guaranteed[0], g as u64);
    let d: Vec<u64> = demand.iter().map(|&x| x as u64).collect();
    let c: Vec<Credits> = credits.iter().map(|&x| Credits::from_int(x as i64).unwrap()).collect();
    let (alloc, after) = match mode {
        0 => {
            let out = karma::batched(&p, &d, &c).unwrap();
            (out.alloc, out.credits)
        }
        1 => (maxmin::batched(&p.fair_share, p.capacity, &d), c),
        _ => (strict::allocate(&p.fair_share, &d), c),
    };
    let word = |x: i64| u32::try_from(x).unwrap_or_else(|_| panic!("software value {x} does not fit 32 bits"));
    (alloc.iter().map(|&a| word(a as i64)).collect(), after.iter().map(|c| word(c.floor_int())).collect())
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

/// Cycles of a quantum on `n` users and `p` lanes that needed no threshold search.
pub fn cycles_without_search(n: usize, p: usize) -> u32 {
    (4 * n.div_ceil(p) + 5) as u32
}
