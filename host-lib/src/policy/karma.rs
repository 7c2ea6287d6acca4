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

use super::select::{Elements, Selector};
use super::{check_lengths, Outcome, Workspace};
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

/// The batched quantum: the same result as [`literal`] bit for bit, in O(n) whatever the
/// credit range. Allocates its result; [`batched_into`] reuses buffers instead.
pub fn batched(p: &KarmaParams, demand: &[u64], credits: &[Credits]) -> Result<Outcome> {
    let mut out = Outcome::default();
    batched_into(&mut Workspace::default(), p, demand, credits, &mut out)?;
    Ok(out)
}

/// One side of the quantum (borrowers or donors) as integer intervals of keys, in user
/// index order: an entry holds user `user` with the keys `top - len + 1 ..= top`. Keys
/// are in units of the side's common step (the price for borrowers, one credit for
/// donors) and donors' keys are negated, so that both sides take their *largest* keys.
/// Entries are 16 bytes (a quantum's pass writes each side with one pointer and reads
/// a key and its length from one place); a length of 2^32 slices or more does not fit,
/// and such a quantum is left to [`search`]. The vector only grows (to the pool size);
/// `n` entries are in use.
#[derive(Clone, Debug, Default)]
pub(crate) struct Intervals {
    entries: Vec<Entry>,
    /// Entries in use.
    n: usize,
    /// Sum of the lengths of the entries in use.
    total: u128,
    /// The lowest key and the highest.
    low: i64,
    high: i64,
}

/// One user's interval of keys (see [`Intervals`]).
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(16))]
struct Entry {
    top: i64,
    len: u32,
    user: u32,
}

/// Fills an [`Intervals`] from a local slice (so that the compiler keeps the pointer in
/// a register), without a branch per entry.
struct Filler<'a> {
    entries: &'a mut [Entry],
    n: usize,
    /// Non-zero when a kept entry's length did not fit in 32 bits.
    long: u64,
}

impl Intervals {
    /// A filler with room for `users` entries, none in use.
    fn filler(&mut self, users: usize) -> Filler<'_> {
        if self.entries.len() < users {
            self.entries.resize(users, Entry::default());
        }
        Filler { entries: &mut self.entries, n: 0, long: 0 }
    }

    /// Takes the `n` entries a filler kept, with their total length and key range: one
    /// pass over the kept entries, with no branch (it vectorises).
    fn finish(&mut self, n: usize) {
        let (mut sum, mut low, mut high) = (0u64, i64::MAX, i64::MIN);
        for e in &self.entries[..n] {
            // Fewer than 2^32 entries of fewer than 2^32 keys: the sum cannot wrap; a
            // donor's |top| is below 2^48 and a borrower's top at least 0, so neither
            // can the lowest key.
            sum += e.len as u64;
            low = low.min(e.top - e.len as i64 + 1);
            high = high.max(e.top);
        }
        (self.n, self.total, self.low, self.high) = (n, sum as u128, low, high);
    }
}

impl<'a> Filler<'a> {
    /// The same filler with room for `users` entries only: a loop over `users` users
    /// then knows every push is in bounds (see [`Filler::push_if`]).
    #[inline(always)]
    fn cut(self, users: usize) -> Filler<'a> {
        let Filler { entries, n, long } = self;
        Filler { entries: &mut entries[..users], n, long }
    }

    /// Writes entry `n` and keeps it only if `keep` (the next write overwrites a dropped
    /// entry). Entries are pushed for users in index order, at most one each, so `n` is
    /// at most `user`: the `min` changes nothing but lets the compiler drop the bounds
    /// checks of a loop over the users.
    #[inline(always)]
    fn push_if(&mut self, keep: bool, user: usize, top: i64, len: u64) {
        let i = self.n.min(user);
        self.entries[i] = Entry { top, len: len as u32, user: user as u32 };
        self.long |= (len >> 32) & (keep as u64).wrapping_neg();
        self.n += keep as usize;
    }
}

impl Intervals {
    /// Keys per entry when the `take` largest are taken (ties: lowest index), as
    /// `visit(user, slices)` in index order. `None` when the keys span 2^61 or more
    /// (the caller then uses [`search`]).
    fn take_largest(&self, select: &mut Selector, take: u128, mut visit: impl FnMut(usize, u64)) -> Option<()> {
        let entries = &self.entries[..self.n];
        if take == 0 {
            return Some(());
        }
        if take == self.total {
            entries.iter().for_each(|e| visit(e.user as usize, e.len as u64));
            return Some(());
        }
        let (low, high) = (self.low, self.high);
        if high as i128 - low as i128 >= 1 << 61 {
            return None;
        }
        let span = (high - low) as u64;
        let keys = KeyIntervals { entries, base: low };
        // T: the take-th largest key, i.e. the largest t with at least `take` keys >= t.
        let (t, above) = select.largest_at_least(&keys, span, take as i128);
        // `above` keys are > T; the rest of `take` are keys equal to T, lowest index first.
        let mut rest = (take - above as u128) as u64;
        for e in entries {
            let (h, len) = ((e.top - low) as u64, e.len as u64);
            let has = (rest > 0) & (h + 1 - len <= t) & (t <= h);
            rest -= has as u64;
            visit(e.user as usize, h.saturating_sub(t).min(len) + has as u64);
        }
        debug_assert_eq!(rest, 0);
        Some(())
    }
}

/// The intervals as the selector's signed elements, as offsets from `base` (the lowest
/// key): `+1` at `h + 1`, `-1` at `l`.
struct KeyIntervals<'a> {
    entries: &'a [Entry],
    base: i64,
}

impl Elements for KeyIntervals<'_> {
    #[inline]
    fn visit(&self, mut visit: impl FnMut(u64, i64)) {
        for e in self.entries {
            let h1 = (e.top - self.base) as u64 + 1;
            visit(h1, 1);
            visit(h1 - e.len as u64, -1);
        }
    }
    fn count(&self) -> usize {
        2 * self.entries.len()
    }
}

/// The batched quantum into reusable buffers: `out` is overwritten (also on error, when
/// its contents are unspecified) and nothing is allocated once `workspace` and `out`
/// have held a quantum of this size.
///
/// Borrowers whose prices are all equal to a power of two `p` and whose balances are all
/// congruent modulo `p` (always so with equal fair shares, where `p` is one credit, and
/// whole initial credits) have their keys on one lattice `r + p Z`: each borrower's keys
/// are an interval of integers there, and the `B` largest keys of all of them are found
/// by [`Selector`]'s radix selection in a constant number of passes. Donors likewise, with step one credit. Other quanta go to
/// [`search`] (same result, O(n log range)).
pub fn batched_into(
    workspace: &mut Workspace,
    p: &KarmaParams,
    demand: &[u64],
    credits: &[Credits],
    out: &mut Outcome,
) -> Result<()> {
    check_lengths(p, demand, credits)?;
    if !radix(workspace, p, demand, credits, out)? {
        *out = search(p, demand, credits)?;
    }
    Ok(())
}

/// The lattice of a quantum's keys: balances after the free credits congruent to `c0`
/// modulo the price, a power of two, and modulo one credit.
struct Lattice {
    c0: i64,
    /// `log2` of the price.
    shift: u32,
    free: i64,
    /// `c0` modulo the price.
    r0: i64,
}

impl Lattice {
    /// `None` unless the price is a power of two.
    fn new(c0: i64, price: i64, free: i64) -> Option<Lattice> {
        (price.count_ones() == 1).then(|| Lattice { c0, shift: price.trailing_zeros(), free, r0: c0 & (price - 1) })
    }

    /// Non-zero when `c` is off the lattice.
    #[inline(always)]
    fn off(&self, c: i64) -> i64 {
        (c ^ self.c0) & (((1 << self.shift) - 1) | (SCALE - 1))
    }

    /// `floor(c / price)`.
    #[inline(always)]
    fn units(&self, c: i64) -> i64 {
        c >> self.shift
    }
}

/// What pass 1 found: an overflow, a balance off the lattice, a length that does not fit
/// an entry, and the entries kept.
struct Split {
    overflowed: bool,
    off_lattice: i64,
    long: bool,
    donors: usize,
    borrowers: usize,
}

/// The columns pass 1 of [`radix`] reads and writes: demand, credits before, and the
/// allocations and credits after.
type Columns<'a> = (&'a [u64], &'a [Credits], &'a mut [u64], &'a mut [Credits]);

/// Pass 1 of [`radix`], compiled apart for equal guaranteed shares (`g0` for all; the
/// pass then reads none). Indexed over slices cut
/// to one length, so that no access needs a bounds check.
#[inline(always)]
fn split<const EQUAL: bool>(
    lattice: &Lattice,
    (guaranteed, g0): (&[u64], u64),
    (demand, credits, alloc, after): Columns<'_>,
    o: Filler<'_>,
    b: Filler<'_>,
) -> Split {
    let n = demand.len();
    let (mut o, mut b) = (o.cut(n), b.cut(n));
    let (credits, alloc, after) = (&credits[..n], &mut alloc[..n], &mut after[..n]);
    let guaranteed = if EQUAL { &guaranteed[..0] } else { &guaranteed[..n] };
    let (free, rest) = (lattice.free, (lattice.r0 > 0) as i64);
    let (mut overflowed, mut off_lattice) = (false, 0i64);
    for u in 0..n {
        let (d, g) = (demand[u], if EQUAL { g0 } else { guaranteed[u] });
        let (c, o_flow) = credits[u].raw().overflowing_add(free);
        overflowed |= o_flow;
        alloc[u] = d.min(g);
        after[u] = Credits::from_raw(c);
        off_lattice |= lattice.off(c);
        // Donors: keys c, c + 1, ... credits, negated: -floor(c) downwards.
        o.push_if(d < g, u, -(c >> FRAC_BITS), g.wrapping_sub(d));
        // Borrowers: keys c, c - price, ... while > 0; with q = floor(c / price) they
        // are q, q - 1, ... in units of the price, down to 0 if c has a remainder (r0)
        // modulo the price, else down to 1.
        let q = lattice.units(c);
        b.push_if((d > g) & (c > 0), u, q, d.wrapping_sub(g).min((q + rest) as u64));
    }
    Split { overflowed, off_lattice, long: o.long | b.long != 0, donors: o.n, borrowers: b.n }
}

/// The radix-selection quantum of [`batched_into`]; `Ok(false)` when the keys are not on
/// one lattice per side (or span 2^61 or more, or a user's interval holds 2^32 keys or
/// more), and the quantum is left to [`search`].
fn radix(
    workspace: &mut Workspace,
    p: &KarmaParams,
    demand: &[u64],
    credits: &[Credits],
    out: &mut Outcome,
) -> Result<bool> {
    let n = p.len();
    let overflow = |u: usize| Error::CreditOverflow { user: u, before: credits[u] };
    let Workspace { borrowers, donors, select } = workspace;
    if u32::try_from(n).is_err() || n == 0 {
        return Ok(false);
    }
    out.alloc.resize(n, 0);
    out.credits.resize(n, Credits::ZERO);
    let price = p.price[0].raw();
    // Every price equal to one power of two (one lattice for the borrowers' keys; always
    // so with equal fair shares, whose price is one credit), in a pass that vectorizes;
    // so is whether every guaranteed share is equal (then the main pass reads none).
    let free = p.free.raw();
    let Some(lattice) = Lattice::new(credits[0].raw().wrapping_add(free), price, free) else {
        return Ok(false);
    };
    if p.price.iter().fold(0, |acc, q| acc | (q.raw() ^ price)) != 0 {
        return Ok(false);
    }
    let g0 = p.guaranteed[0];
    let equal_shares = p.guaranteed.iter().fold(0, |acc, &g| acc | (g ^ g0)) == 0;
    // Pass 1: free credits, guaranteed allocations, the intervals of both sides, and
    // whether the keys of each side lie on one lattice: every balance congruent to the
    // first one modulo the price (borrowers' keys) and modulo one credit (donors' keys).
    // Checked over all users (a user's role does not matter), with OR-reductions, no
    // branch; compiled apart for equal guaranteed shares.
    let (o, b) = (donors.filler(n), borrowers.filler(n));
    let (shares, columns) = ((&p.guaranteed[..], g0), (demand, credits, &mut out.alloc[..], &mut out.credits[..]));
    let pass = match equal_shares {
        true => split::<true>(&lattice, shares, columns, o, b),
        false => split::<false>(&lattice, shares, columns, o, b),
    };
    let Split { overflowed, off_lattice, long, donors: donors_kept, borrowers: borrowers_kept } = pass;
    if overflowed {
        let u = (0..n).find(|&u| credits[u].raw().checked_add(free).is_none()).unwrap_or(0);
        return Err(overflow(u));
    }
    if off_lattice != 0 || long {
        return Ok(false);
    }
    donors.finish(donors_kept);
    borrowers.finish(borrowers_kept);
    let borrowed = (donors.total + p.shared as u128).min(borrowers.total);
    let used = borrowed.min(donors.total);
    let paid = borrowers.take_largest(select, borrowed, |u, k| {
        out.alloc[u] += k;
        // The result is in range (the last key taken is > 0, so the balance stays above
        // -price), so wrapping arithmetic gives it exactly.
        out.credits[u] = Credits::from_raw(out.credits[u].raw().wrapping_sub((k as i64).wrapping_mul(price)));
    });
    let mut earned_overflow = None;
    let earned = donors.take_largest(select, used, |u, k| {
        let earned = i64::try_from(k).ok().and_then(|k| k.checked_mul(SCALE));
        match earned.and_then(|e| out.credits[u].raw().checked_add(e)) {
            Some(after) => out.credits[u] = Credits::from_raw(after),
            None => earned_overflow = earned_overflow.or(Some(u)),
        }
    });
    if paid.is_none() || earned.is_none() {
        return Ok(false);
    }
    match earned_overflow {
        Some(u) => Err(overflow(u)),
        None => Ok(true),
    }
}

/// The batched quantum by binary search: the same result as [`literal`] and
/// [`batched`], computed with two threshold searches. The borrowed slices are the `B`
/// largest borrower keys and the used donated slices the `min(B, donated)` smallest
/// donor keys (ties: lowest index), where `B = min(supply, candidate slices)`. Each
/// search is a binary search over the key range with one counting pass per probe (users
/// whose count is settled leave the scan): O(n log range).
///
/// [`batched_into`] uses it for the quanta its radix selection does not cover:
/// borrowers with different prices (weighted shares) or balances on different lattices
/// (fractional credits).
pub fn search(p: &KarmaParams, demand: &[u64], credits: &[Credits]) -> Result<Outcome> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Alpha, PoolConfig};

    fn pool(shares: &[u64]) -> KarmaParams {
        let mut cfg = PoolConfig::equal(shares.len(), 1, Alpha::new(1, 2).unwrap(), 0).unwrap();
        for (u, &f) in cfg.users.iter_mut().zip(shares) {
            u.fair_share = f;
            u.guaranteed = f / 2;
        }
        KarmaParams::from_config(&cfg).unwrap()
    }

    /// Which path computes a quantum: the radix selection or the search.
    fn radix_covers(p: &KarmaParams, demand: &[u64], credits: &[i64]) -> bool {
        let credits: Vec<Credits> = credits.iter().map(|&c| Credits::from_raw(c)).collect();
        let mut out = Outcome::default();
        let covered = radix(&mut Workspace::default(), p, demand, &credits, &mut out).unwrap();
        if covered {
            assert_eq!(out, literal(p, demand, &credits).unwrap());
        }
        covered
    }

    #[test]
    fn equal_shares_and_whole_credits_take_the_radix_path() {
        let p = pool(&[4, 4, 4, 4]);
        let whole = [3 * SCALE, -2 * SCALE, 40 * SCALE, 0];
        assert!(radix_covers(&p, &[9, 0, 7, 1], &whole));
        // Fractional balances on one lattice (same fraction everywhere) still do.
        assert!(radix_covers(&p, &[9, 0, 7, 1], &whole.map(|c| c + 5)));
    }

    #[test]
    fn different_prices_or_lattices_take_the_search() {
        let unequal = pool(&[2, 4, 4, 6]);
        assert!(!radix_covers(&unequal, &[9, 9, 9, 0], &[SCALE; 4]));
        let p = pool(&[4, 4, 4, 4]);
        assert!(!radix_covers(&p, &[9, 9, 0, 0], &[SCALE, SCALE + 1, 0, 0]), "borrowers on two lattices");
        assert!(!radix_covers(&p, &[9, 0, 0, 0], &[SCALE, 0, 7, 0]), "donors on two lattices");
    }

    #[test]
    fn an_interval_of_2_to_the_32_keys_takes_the_search() {
        let p = pool(&[4, 4, 4, 4]);
        // 2^34 credits and a demand of 2^40: 2^34 candidate keys, more than an entry holds.
        let rich = [(1 << 34) * SCALE, 0, 0, 0];
        assert!(!radix_covers(&p, &[1 << 40, 0, 0, 0], &rich));
        // The boundary (guaranteed share 2): 2^32 - 1 keys fit an entry, 2^32 do not.
        assert!(radix_covers(&p, &[2 + (1 << 32) - 1, 0, 0, 0], &rich));
        assert!(!radix_covers(&p, &[2 + (1 << 32), 0, 0, 0], &rich));
        let credits = rich.map(Credits::from_raw);
        assert_eq!(
            batched(&p, &[1 << 40, 0, 0, 0], &credits).unwrap(),
            literal(&p, &[1 << 40, 0, 0, 0], &credits).unwrap()
        );
    }
}
