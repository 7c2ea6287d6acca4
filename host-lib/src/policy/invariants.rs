//! The invariants every correct quantum keeps, checkable in one pass without
//! recomputing the quantum: what the offload backend holds a device's result to when
//! it does not recompute it first ([`crate::offload::Verify`]), and what the tests
//! hold every implementation to.
//!
//! Stated for equal shares with whole credits (a device's domain; Algorithm 1, price
//! one credit per slice):
//! - one result per user; `min(d, g) <= alloc <= d` for every user; the allocations sum
//!   to at most the pool;
//! - Karma: a borrower (`alloc > g`) ends with exactly `before + free - (alloc - g)`; a
//!   donor with `before + free + e` where `0 <= e <= max(g - d, 0)` (what it lent); and
//!   donors earn no more than borrowers paid;
//! - max-min and strict partitioning: balances unchanged; strict partitioning gives
//!   every user exactly `min(d, f)`.
//!
//! A result can keep every invariant and still be wrong (say, a slice lent by the
//! wrong donor): only recomputing (the literal oracle or the batched form) sees that.

use crate::config::KarmaParams;
use crate::{Credits, Policy};

/// A broken invariant, naming the user and the values.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Violation(pub String);

fn broken<T>(what: String) -> Result<T, Violation> {
    Err(Violation(what))
}

/// Checks one quantum of `policy` on a pool of `params`: the demands, the balances
/// before, and the allocations and balances after that some implementation returned.
pub fn check(
    policy: Policy,
    params: &KarmaParams,
    demand: &[u64],
    before: &[Credits],
    alloc: &[u64],
    after: &[Credits],
) -> Result<(), Violation> {
    let n = demand.len();
    if alloc.len() != n || after.len() != n || before.len() != n {
        return broken(format!("{} allocations and {} balances for {n} users", alloc.len(), after.len()));
    }
    let mut total = 0u64;
    for u in 0..n {
        let a = alloc[u];
        let floor = demand[u].min(params.guaranteed[u]);
        if a > demand[u] || a < floor {
            return broken(format!(
                "allocation {a} of user {u} is outside [{floor}, {}] (guaranteed part to demand)",
                demand[u]
            ));
        }
        let fair = params.fair_share[u];
        if policy == Policy::Strict && a != demand[u].min(fair) {
            return broken(format!(
                "allocation {a} of user {u}: strict partitioning gives min(demand, fair share) = {}",
                demand[u].min(fair)
            ));
        }
        total = total.saturating_add(a);
    }
    if total > params.capacity {
        return broken(format!("the allocations sum to {total}, above the pool's {} slices", params.capacity));
    }
    let free = params.free.floor_int();
    let (mut borrowed, mut earned) = (0i64, 0i64);
    for u in 0..n {
        if !before[u].is_integer() || !after[u].is_integer() {
            return broken(format!("user {u}: balances {} -> {} are not whole credits", before[u], after[u]));
        }
        let (b, c) = (before[u].floor_int(), after[u].floor_int());
        // Values are below 2^63 / 4: demands and shares are u64 counts of slices that a
        // pool of at most 2^63 slices holds; the differences below cannot overflow i128.
        let (a, g, d) = (alloc[u] as i128, params.guaranteed[u] as i128, demand[u] as i128);
        let (b, c, free) = (b as i128, c as i128, free as i128);
        let ok = match policy {
            Policy::Karma if a > g => {
                borrowed += (a - g) as i64;
                c == b + free - (a - g)
            }
            Policy::Karma => {
                earned += (c - b - free) as i64;
                (0..=(g - d).max(0)).contains(&(c - b - free))
            }
            Policy::MaxMin | Policy::Strict => c == b,
        };
        if !ok {
            return broken(format!(
                "credit conservation broken at user {u}: {b} -> {c} credits with allocation {a}, guaranteed {g}, demand {d}"
            ));
        }
    }
    if earned > borrowed {
        return broken(format!(
            "credit conservation broken: donors earned {earned} credits for {borrowed} borrowed slices"
        ));
    }
    Ok(())
}

/// One quantum in device words (equal shares, whole credits below 2^31), for
/// [`check_words`].
#[derive(Clone, Copy, Debug)]
pub struct Words<'a> {
    /// Demands.
    pub demand: &'a [u32],
    /// Balances before.
    pub before: &'a [u32],
    /// Allocations.
    pub alloc: &'a [u32],
    /// Balances after.
    pub after: &'a [u32],
}

/// [`check`] for a quantum in device words on a pool of equal shares (every user's
/// guaranteed share is `params.guaranteed[0]`): the same verdict, in one branch-free
/// pass that the compiler vectorizes, because a device's every result goes through it
/// on the caller's critical path. When it fails, [`check`] names what broke.
pub fn check_words(policy: Policy, params: &KarmaParams, w: &Words<'_>) -> Result<(), Violation> {
    let n = w.demand.len();
    let lengths = w.alloc.len() == n && w.after.len() == n && w.before.len() == n;
    if lengths && params.guaranteed.len() == n && params.fair_share.len() == n && words_hold(policy, params, w) {
        return Ok(());
    }
    let widen = |x: &[u32]| x.iter().map(|&v| v as u64).collect::<Vec<_>>();
    let credits = |x: &[u32]| x.iter().map(|&v| Credits::from_raw((v as i64) << crate::credits::FRAC_BITS)).collect();
    let (before, after): (Vec<Credits>, Vec<Credits>) = (credits(w.before), credits(w.after));
    check(policy, params, &widen(w.demand), &before, &widen(w.alloc), &after)?;
    // Unreachable while the two agree (a test holds them to it); never accept silently.
    broken("the device's result breaks an invariant of the policy".into())
}

/// The fast pass of [`check_words`]: true when every invariant holds. Words below
/// [`NARROW`] (every real pool: balances below half a billion credits) go through
/// [`karma_narrow`], which the compiler vectorizes; wider ones through
/// [`karma_wide`]. Both say exactly what [`check`] says.
fn words_hold(policy: Policy, params: &KarmaParams, w: &Words<'_>) -> bool {
    let g = params.guaranteed.first().copied().unwrap_or(0);
    if !params.free.is_integer() || params.free.raw() < 0 {
        return false;
    }
    let free = params.free.floor_int() as u64;
    let n = w.demand.len();
    let (demand, alloc, before, after) = (&w.demand[..n], &w.alloc[..n], &w.before[..n], &w.after[..n]);
    let capacity = params.capacity;
    match policy {
        Policy::Karma => {
            let narrow = if g < NARROW && free < NARROW {
                karma_narrow(g as i32, free as i32, demand, alloc, before, after)
            } else {
                None
            };
            let (hold, total) = narrow.unwrap_or_else(|| {
                karma_wide(g.min(u32::MAX as u64) as i64, free as i64, demand, alloc, before, after)
            });
            hold && total <= capacity
        }
        Policy::MaxMin => {
            let g = g.min(u32::MAX as u64) as u32;
            let range = demand.iter().zip(alloc).fold(false, |bad, (&d, &a)| bad | (a > d) | (a < d.min(g)));
            !range && before == after && total(alloc) <= capacity
        }
        Policy::Strict => {
            let f = params.fair_share.first().copied().unwrap_or(0).min(u32::MAX as u64) as u32;
            let exact = demand.iter().zip(alloc).all(|(&d, &a)| a == d.min(f));
            exact && before == after && total(alloc) <= capacity
        }
    }
}

/// The sum of the allocations.
fn total(alloc: &[u32]) -> u64 {
    alloc.iter().map(|&a| a as u64).sum()
}

/// Words below this (2^29) make every sum of three fit an `i32`.
const NARROW: u64 = 1 << 29;

/// Karma's per-user invariants and the credit balance, in `i32` lanes, in one pass
/// (every word is read once: this runs on the caller's critical path for every device
/// quantum), with the allocations' total. A user with `d`, `a`, balance `b` before and
/// `c` after, borrowing `over = max(a - g, 0)`: `min(d, g) <= a <= d`, and
/// `lo <= c <= lo + g - min(d, g)` with `lo = b + free - over` (a borrower pays exactly
/// what it borrowed, and then `g - min(d, g)` is 0 because `g < a <= d`; a donor earns
/// at most what it left unused). Each condition is a difference that must not be
/// negative: their OR's sign bit is the verdict.
///
/// The balance (donors earn no more than borrowers pay, `sum(earned) <= sum(over)`)
/// needs no per-user terms: where every user's condition holds, a user earns `c - lo`
/// (a borrower's `c` is `lo`, and earns nothing), so the balance is
/// `sum(c - b - free + over) <= sum(over)`, that is `sum(c - b) <= n * free`.
///
/// The arithmetic wraps, and the verdict counts only when every word is below
/// [`NARROW`] (then nothing wraps): `None` otherwise. Blocks of [`LANES`] x [`ROWS`]
/// users keep their sums in 32-bit lanes (each term is below 2^29 in size, so [`ROWS`]
/// of them fit), widened once per block: the loop then runs in vector registers even
/// without wide integer instructions.
fn karma_narrow(
    g: i32,
    free: i32,
    demand: &[u32],
    alloc: &[u32],
    before: &[u32],
    after: &[u32],
) -> Option<(bool, u64)> {
    let n = demand.len();
    let (alloc, before, after) = (&alloc[..n], &before[..n], &after[..n]);
    let (mut bad, mut high) = ([0i32; LANES], [0u32; LANES]);
    let (mut total, mut gained) = (0u64, 0i64);
    let blocked = n / (LANES * ROWS) * (LANES * ROWS);
    for block in (0..blocked).step_by(LANES * ROWS) {
        let (mut t, mut s) = ([0u32; LANES], [0i32; LANES]);
        for row in (block..block + LANES * ROWS).step_by(LANES) {
            let r = row..row + LANES;
            let (d, a, b, c) = (&demand[r.clone()], &alloc[r.clone()], &before[r.clone()], &after[r]);
            for i in 0..LANES {
                let user = KarmaWords::of(g, free, d[i], a[i], b[i], c[i]);
                (bad[i], high[i]) = (bad[i] | user.bad, high[i] | user.high);
                t[i] = t[i].wrapping_add(a[i]);
                s[i] = s[i].wrapping_add(user.gained);
            }
        }
        for i in 0..LANES {
            (total, gained) = (total + t[i] as u64, gained + s[i] as i64);
        }
    }
    let (mut bad, mut high) = (bad.iter().fold(0, |x, y| x | y), high.iter().fold(0, |x, y| x | y));
    for u in blocked..n {
        let user = KarmaWords::of(g, free, demand[u], alloc[u], before[u], after[u]);
        (bad, high) = (bad | user.bad, high | user.high);
        (total, gained) = (total + alloc[u] as u64, gained + user.gained as i64);
    }
    ((high as u64) < NARROW).then_some((bad >= 0 && gained <= n as i64 * free as i64, total))
}

/// Users per block of [`karma_narrow`], side by side (one vector register's worth of
/// `i32` lanes on most machines, two on the oldest).
const LANES: usize = 8;
/// Rows of [`LANES`] users per block of [`karma_narrow`].
const ROWS: usize = 4;

/// One user's part of [`karma_narrow`], with wrapping `i32` arithmetic and the
/// branch-free `max(x, 0)` of a sign mask.
struct KarmaWords {
    /// Negative if an invariant breaks.
    bad: i32,
    /// The OR of the words.
    high: u32,
    /// The balance's change, `c - b`.
    gained: i32,
}

impl KarmaWords {
    #[inline(always)]
    fn of(g: i32, free: i32, d: u32, a: u32, b: u32, c: u32) -> KarmaWords {
        let positive = |x: i32| x & !(x >> 31);
        let high = d | a | b | c;
        let (d, a, b, c) = (d as i32, a as i32, b as i32, c as i32);
        let lo = b.wrapping_add(free).wrapping_sub(positive(a.wrapping_sub(g)));
        // min(d, g) = d - max(d - g, 0)
        let floor = d.wrapping_sub(positive(d.wrapping_sub(g)));
        let hi = lo.wrapping_add(g.wrapping_sub(floor));
        let bad = d.wrapping_sub(a) | a.wrapping_sub(floor) | c.wrapping_sub(lo) | hi.wrapping_sub(c);
        KarmaWords { bad, high, gained: c.wrapping_sub(b) }
    }
}

/// [`karma_narrow`] in `i64`, for words up to 2^32.
fn karma_wide(g: i64, free: i64, demand: &[u32], alloc: &[u32], before: &[u32], after: &[u32]) -> (bool, u64) {
    let (mut bad, mut borrowed, mut earned) = (false, 0i64, 0i64);
    for u in 0..demand.len() {
        let (d, a, b, c) = (demand[u] as i64, alloc[u] as i64, before[u] as i64, after[u] as i64);
        let over = (a - g).max(0);
        let lo = b + free - over;
        let hi = lo + (g - d).max(0);
        bad |= (a > d) | (a < d.min(g)) | (c < lo) | (c > hi);
        borrowed += over;
        earned += (c - (b + free)).max(0);
    }
    (!bad && earned <= borrowed, total(alloc))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::karma;
    use crate::{Alpha, PoolConfig};

    fn setup() -> (KarmaParams, Vec<u64>, Vec<Credits>) {
        let config = PoolConfig::equal(4, 4, Alpha::new(1, 2).unwrap(), 3).unwrap();
        let params = KarmaParams::from_config(&config).unwrap();
        let before = vec![Credits::from_int(3).unwrap(); 4];
        (params, vec![0, 9, 1, 6], before)
    }

    #[test]
    fn the_oracle_keeps_every_invariant() {
        let (params, demand, before) = setup();
        let out = karma::literal(&params, &demand, &before).unwrap();
        assert_eq!(check(Policy::Karma, &params, &demand, &before, &out.alloc, &out.credits), Ok(()));
    }

    #[test]
    fn each_broken_invariant_is_named() {
        let (params, demand, before) = setup();
        let out = karma::literal(&params, &demand, &before).unwrap();
        let mut above = out.alloc.clone();
        above[0] = 1; // user 0 demands nothing
        let mut minted = out.credits.clone();
        minted[0] = Credits::from_int(minted[0].floor_int() + 1).unwrap();
        let mut short = out.alloc.clone();
        short.pop();
        for (alloc, credits, words) in [
            (&above, &out.credits, "outside [0, 0]"),
            (&out.alloc, &minted, "conservation broken"),
            (&short, &out.credits, "3 allocations"),
        ] {
            let e = check(Policy::Karma, &params, &demand, &before, alloc, credits).unwrap_err();
            assert!(e.0.contains(words), "{e}");
        }
        let e = check(Policy::MaxMin, &params, &demand, &before, &out.alloc, &out.credits).unwrap_err();
        assert!(e.0.contains("conservation"), "max-min keeps balances: {e}");
    }
}
