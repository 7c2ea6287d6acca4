//! One Karma quantum (the paper's Algorithms 1 and 2), as the literal loop and in
//! batched form. Semantics: `docs/spec/karma.md`; credits: [`crate::credits`].
//!
//! A quantum: (1) every user gains the free credits; (2) `alloc = min(d, g)`, and a user
//! demanding less than `g` donates `g - d`; (3) while a borrower (`alloc < d`, credits
//! `> 0`) and a slice (donated or shared) remain, the borrower with the most credits
//! (ties: lowest index) takes one slice and pays its price; the slice comes from the
//! donor with the fewest credits (ties: lowest index), who earns one credit, or else
//! from the shared slices.
//!
//! Range rule (both implementations): every balance must be representable after
//! step 1 and at the end of the quantum; otherwise the quantum fails with
//! [`Error::CreditOverflow`] naming the lowest such user, and nothing changes.

use super::{check_lengths, Outcome};
use crate::config::KarmaParams;
use crate::credits::{Credits, FRAC_BITS, SCALE};
use crate::error::{Error, Result};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The literal slice-by-slice loop: the oracle every other implementation is checked
/// against. O(slices handed out × log n). Credits are held in `i128` so the loop itself
/// cannot overflow; the range is checked when the result is written back.
pub fn literal(p: &KarmaParams, demand: &[u64], credits: &[Credits]) -> Result<Outcome> {
    check_lengths(p, demand, credits)?;
    let n = p.len();
    // Step 1: free credits (the balance must stay representable, see the module doc).
    let mut c: Vec<i128> = credits.iter().map(|c| c.raw() as i128 + p.free.raw() as i128).collect();
    if let Some(u) = c.iter().position(|&v| i64::try_from(v).is_err()) {
        return Err(Error::CreditOverflow { user: u, before: credits[u] });
    }
    // Step 2: guaranteed allocation and donations.
    let mut alloc: Vec<u64> = (0..n).map(|u| demand[u].min(p.guaranteed[u])).collect();
    let mut donated: Vec<u64> = (0..n).map(|u| p.guaranteed[u] - alloc[u]).collect();
    let mut shared = p.shared;
    // Step 3: borrowers by most credits, donors by fewest credits; ties to the lowest index.
    let mut borrowers: BinaryHeap<(i128, Reverse<usize>)> =
        (0..n).filter(|&u| alloc[u] < demand[u] && c[u] > 0).map(|u| (c[u], Reverse(u))).collect();
    let mut donors: BinaryHeap<Reverse<(i128, usize)>> =
        (0..n).filter(|&u| donated[u] > 0).map(|u| Reverse((c[u], u))).collect();
    loop {
        if donors.is_empty() && shared == 0 {
            break;
        }
        let Some((_, Reverse(b))) = borrowers.pop() else { break };
        if let Some(Reverse((_, d))) = donors.pop() {
            c[d] += SCALE as i128;
            donated[d] -= 1;
            if donated[d] > 0 {
                donors.push(Reverse((c[d], d)));
            }
        } else {
            shared -= 1;
        }
        alloc[b] += 1;
        c[b] -= p.price[b].raw() as i128;
        if alloc[b] < demand[b] && c[b] > 0 {
            borrowers.push((c[b], Reverse(b)));
        }
    }
    let credits = c
        .iter()
        .enumerate()
        .map(|(u, &v)| {
            i64::try_from(v).map(Credits::from_raw).map_err(|_| Error::CreditOverflow { user: u, before: credits[u] })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Outcome { alloc, credits })
}

/// One user's candidate keys, as a threshold search sees them.
trait Keys: Clone {
    /// How many of the keys a probe at `t` counts (monotone in `t`).
    fn count(&self, t: i128) -> u64;
    /// `Some(count)` when the count is the same for every `t` with `lo < t < hi`: the
    /// user then leaves the search and its count becomes a constant.
    fn settled(&self, lo: i128, hi: i128) -> Option<u64>;
}

/// A user that wants to borrow: its candidate slices have the keys
/// `credits - (k-1) * price` for `k = 1 ..= slices`, all `> 0`. Probes count keys `> t`.
#[derive(Clone)]
struct Borrower {
    user: usize,
    credits: i64,
    price: i64,
    slices: u64,
}

impl Borrower {
    /// Candidate keys `> t`.
    fn count_above(&self, t: i64) -> u64 {
        if t >= self.credits {
            0
        } else {
            (((self.credits - t - 1) / self.price) as u64 + 1).min(self.slices)
        }
    }
    /// Whether one of the candidate keys equals `t` (at most one can).
    fn has_key(&self, t: i64) -> bool {
        t <= self.credits
            && (self.credits - t) % self.price == 0
            && (((self.credits - t) / self.price) as u64) < self.slices
    }
    /// The smallest candidate key.
    fn lowest_key(&self) -> i64 {
        self.credits - (self.slices as i64 - 1) * self.price
    }
}

impl Keys for Borrower {
    fn count(&self, t: i128) -> u64 {
        // Probes lie between the lowest key - 1 and the highest credits: inside i64.
        self.count_above(t as i64)
    }
    fn settled(&self, lo: i128, hi: i128) -> Option<u64> {
        if self.credits as i128 <= lo + 1 {
            Some(0)
        } else if self.lowest_key() as i128 >= hi {
            Some(self.slices)
        } else {
            None
        }
    }
}

/// A user that donates: its donated slices, when used, have the keys
/// `credits + (j-1)` credits for `j = 1 ..= slices`. Probes count keys `< t`.
#[derive(Clone)]
struct Donor {
    user: usize,
    credits: i64,
    slices: u64,
}

impl Donor {
    /// Keys `< t` (`t` in raw units, `i128` because donor keys may pass `i64::MAX`).
    fn count_below(&self, t: i128) -> u64 {
        let c = self.credits as i128;
        if t <= c {
            0
        } else {
            let below = ((t - c - 1) >> FRAC_BITS) + 1;
            u64::try_from(below).unwrap_or(u64::MAX).min(self.slices)
        }
    }
    fn has_key(&self, t: i128) -> bool {
        let c = self.credits as i128;
        t >= c && (t - c) % SCALE as i128 == 0 && ((t - c) >> FRAC_BITS) < self.slices as i128
    }
    /// The largest key.
    fn highest_key(&self) -> i128 {
        self.credits as i128 + ((self.slices as i128 - 1) << FRAC_BITS)
    }
}

impl Keys for Donor {
    fn count(&self, t: i128) -> u64 {
        self.count_below(t)
    }
    fn settled(&self, lo: i128, hi: i128) -> Option<u64> {
        if self.credits as i128 >= hi - 1 {
            Some(0)
        } else if self.highest_key() <= lo {
            Some(self.slices)
        } else {
            None
        }
    }
}

/// Binary search for the boundary of a monotone predicate on the summed counts: given
/// `good(count(lo))` and `!good(count(hi))`, returns `(t, t + 1)` with `good` at `t` and
/// not at `t + 1`. After every probe, users whose count is settled for the rest of the
/// interval leave the scan (as in quickselect), so later passes touch only the users near
/// the threshold; the sums, and so the result, are those of the full scan.
fn boundary<K: Keys>(users: &[K], mut lo: i128, mut hi: i128, good: impl Fn(u128) -> bool) -> (i128, i128) {
    let mut active: Option<Vec<K>> = None;
    let mut fixed: u128 = 0;
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        let scan = active.as_deref().unwrap_or(users);
        let count = fixed + scan.iter().map(|k| k.count(mid) as u128).sum::<u128>();
        if good(count) {
            lo = mid;
        } else {
            hi = mid;
        }
        let mut keep = |k: &K| match k.settled(lo, hi) {
            Some(c) => {
                fixed += c as u128;
                false
            }
            None => true,
        };
        match active.as_mut() {
            Some(v) => v.retain(keep),
            None => active = Some(users.iter().filter(|k| keep(k)).cloned().collect()),
        }
    }
    (lo, hi)
}

/// The batched quantum: the same result as [`literal`], computed with two threshold
/// searches. The borrowed slices are the `B` largest borrower keys and the used donated
/// slices the `min(B, donated)` smallest donor keys (ties: lowest index), where
/// `B = min(supply, candidate slices)`. Each search is a binary search over the key
/// range with one counting pass per probe: O(n log range), whatever the pool size.
pub fn batched(p: &KarmaParams, demand: &[u64], credits: &[Credits]) -> Result<Outcome> {
    check_lengths(p, demand, credits)?;
    let n = p.len();
    let overflow = |u: usize| Error::CreditOverflow { user: u, before: credits[u] };
    let mut alloc = Vec::with_capacity(n);
    let mut after = Vec::with_capacity(n);
    // Reserved for every user: untouched capacity costs no memory, regrowth costs copies.
    let mut borrowers = Vec::with_capacity(n);
    let mut donors = Vec::with_capacity(n);
    let mut donated_total: u128 = 0;
    for u in 0..n {
        let c = credits[u].raw().checked_add(p.free.raw()).ok_or_else(|| overflow(u))?;
        let (d, g) = (demand[u], p.guaranteed[u]);
        alloc.push(d.min(g));
        after.push(c);
        if d < g {
            donors.push(Donor { user: u, credits: c, slices: g - d });
            donated_total += (g - d) as u128;
        } else if d > g && c > 0 {
            let price = p.price[u].raw();
            let affordable = ((c - 1) / price) as u64 + 1; // keys c, c-p, ... that are > 0
            borrowers.push(Borrower { user: u, credits: c, price, slices: (d - g).min(affordable) });
        }
    }
    let supply = donated_total + p.shared as u128;
    let candidates: u128 = borrowers.iter().map(|b| b.slices as u128).sum();
    let borrowed = supply.min(candidates);
    let used = borrowed.min(donated_total);

    for (b, k) in borrowers.iter().zip(take_highest(&borrowers, borrowed, candidates)) {
        let cost = (k as i64).checked_mul(b.price).ok_or_else(|| overflow(b.user))?;
        alloc[b.user] += k;
        after[b.user] = b.credits.checked_sub(cost).ok_or_else(|| overflow(b.user))?;
    }
    for (d, k) in donors.iter().zip(take_lowest(&donors, used, donated_total)) {
        let earned = i64::try_from(k).ok().and_then(|k| k.checked_mul(SCALE)).ok_or_else(|| overflow(d.user))?;
        after[d.user] = d.credits.checked_add(earned).ok_or_else(|| overflow(d.user))?;
    }
    Ok(Outcome { alloc, credits: after.into_iter().map(Credits::from_raw).collect() })
}

/// Slices per borrower when the `total` largest keys are taken (ties: lowest index).
fn take_highest(borrowers: &[Borrower], total: u128, candidates: u128) -> Vec<u64> {
    if total == candidates {
        return borrowers.iter().map(|b| b.slices).collect();
    }
    if total == 0 {
        return vec![0; borrowers.len()];
    }
    // Threshold T: the total-th largest key, i.e. the smallest t with fewer than
    // `total` keys above it. count_above(lowest key - 1) = candidates >= total and
    // count_above(highest credits) = 0 < total.
    let lo = borrowers.iter().map(Borrower::lowest_key).min().unwrap_or(1) - 1;
    let hi = borrowers.iter().map(|b| b.credits).max().unwrap_or(0);
    let (_, threshold) = boundary(borrowers, lo as i128, hi as i128, |above| above >= total);
    let threshold = threshold as i64; // count_above(T) < total <= count_above(T - 1)
    let mut take: Vec<u64> = borrowers.iter().map(|b| b.count_above(threshold)).collect();
    let mut rest = total - take.iter().map(|&k| k as u128).sum::<u128>();
    for (b, k) in borrowers.iter().zip(take.iter_mut()) {
        if rest == 0 {
            break;
        }
        if b.has_key(threshold) {
            *k += 1;
            rest -= 1;
        }
    }
    debug_assert_eq!(rest, 0);
    take
}

/// Slices per donor when the `total` smallest keys are used (ties: lowest index).
fn take_lowest(donors: &[Donor], total: u128, donated: u128) -> Vec<u64> {
    if total == donated {
        return donors.iter().map(|d| d.slices).collect();
    }
    if total == 0 {
        return vec![0; donors.len()];
    }
    // Threshold T: the total-th smallest key, i.e. the largest t with fewer than `total`
    // keys below it. count_below(lowest credits) = 0 < total and
    // count_below(highest key + 1) = donated >= total.
    let lo = donors.iter().map(|d| d.credits as i128).min().unwrap_or(0);
    let hi = donors.iter().map(|d| d.highest_key() + 1).max().unwrap_or(1);
    let (threshold, _) = boundary(donors, lo, hi, |below| below < total);
    // count_below(T) < total <= count_below(T + 1): the key at T completes it.
    let mut take: Vec<u64> = donors.iter().map(|d| d.count_below(threshold)).collect();
    let mut rest = total - take.iter().map(|&k| k as u128).sum::<u128>();
    for (d, k) in donors.iter().zip(take.iter_mut()) {
        if rest == 0 {
            break;
        }
        if d.has_key(threshold) {
            *k += 1;
            rest -= 1;
        }
    }
    debug_assert_eq!(rest, 0);
    take
}
