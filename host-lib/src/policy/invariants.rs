//! The invariants every correct quantum keeps, checkable in one pass without
//! recomputing the quantum: what the offload backend holds a device's result to when
//! it does not recompute it ([`crate::offload::Verify::Checks`]), and what the tests
//! hold every implementation to.
//!
//! Stated for equal shares with whole credits (a device's domain; Algorithm 1, price
//! one credit per slice):
//! - one result per user; `min(d, g) <= alloc <= d` for every user; the allocations sum
//!   to at most the pool;
//! - Karma: a borrower (`alloc > g`) ends with exactly `before + free - (alloc - g)`; a
//!   donor with `before + free + e` where `0 <= e <= max(g - d, 0)` (what it lent); and
//!   donors earn no more than borrowers paid;
//! - max-min and strict partitioning: balances unchanged.
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
