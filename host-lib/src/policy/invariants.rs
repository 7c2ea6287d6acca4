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
    let total: u64 = alloc.iter().map(|&a| a as u64).sum();
    if total > params.capacity {
        return false;
    }
    match policy {
        Policy::Karma => {
            let high = [demand, alloc, before, after].iter().flat_map(|x| x.iter()).fold(0u32, |h, &v| h | v);
            if (high as u64) < NARROW && g < NARROW && free < NARROW {
                karma_narrow(g as i32, free as i32, demand, alloc, before, after)
            } else {
                karma_wide(g.min(u32::MAX as u64) as i64, free as i64, demand, alloc, before, after)
            }
        }
        Policy::MaxMin => {
            let g = g.min(u32::MAX as u64) as u32;
            let range = demand.iter().zip(alloc).fold(false, |bad, (&d, &a)| bad | (a > d) | (a < d.min(g)));
            !range && before == after
        }
        Policy::Strict => {
            let f = params.fair_share.first().copied().unwrap_or(0).min(u32::MAX as u64) as u32;
            let exact = demand.iter().zip(alloc).all(|(&d, &a)| a == d.min(f));
            exact && before == after
        }
    }
}

/// Words below this (2^29) make every sum of three fit an `i32`.
const NARROW: u64 = 1 << 29;

/// Karma's per-user invariants and the credit balance, in `i32` lanes. A user with `d`,
/// `a`, balance `b` before and `c` after, borrowing `over = max(a - g, 0)`:
/// `min(d, g) <= a <= d`, and `lo <= c <= lo + max(g - d, 0)` with
/// `lo = b + free - over` (a borrower pays exactly what it borrowed, and then
/// `max(g - d, 0)` is 0 because `a <= d`; a donor earns at most what it left unused).
/// Each condition is a difference that must not be negative: their OR's sign bit is the
/// verdict.
fn karma_narrow(g: i32, free: i32, demand: &[u32], alloc: &[u32], before: &[u32], after: &[u32]) -> bool {
    let n = demand.len();
    let (alloc, before, after) = (&alloc[..n], &before[..n], &after[..n]);
    let mut bad = 0i32;
    for u in 0..n {
        let (d, a, b, c) = (demand[u] as i32, alloc[u] as i32, before[u] as i32, after[u] as i32);
        let lo = b + free - (a - g).max(0);
        let hi = lo + (g - d).max(0);
        bad |= (d - a) | (a - d.min(g)) | (c - lo) | (hi - c);
    }
    // Donors earn no more than borrowers paid.
    let borrowed: u64 = alloc.iter().map(|&a| (a as i32 - g).max(0) as u64).sum();
    let earned: u64 = after.iter().zip(before).map(|(&c, &b)| (c as i32 - (b as i32 + free)).max(0) as u64).sum();
    bad >= 0 && earned <= borrowed
}

/// [`karma_narrow`] in `i64`, for words up to 2^32.
fn karma_wide(g: i64, free: i64, demand: &[u32], alloc: &[u32], before: &[u32], after: &[u32]) -> bool {
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
    !bad && earned <= borrowed
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
