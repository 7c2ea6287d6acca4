//! Radix selection: the threshold of a batched quantum in a constant number of passes.
//!
//! Both batched policies reduce to one question about a multiset of integers with signs.
//! For `t` an integer let
//!
//! ```text
//! f(t) = sum over elements z > t of sign(z) * (z - t)
//! ```
//!
//! When `f` does not increase with `t`, the answer is the largest `t` in `[lo, hi]` with
//! `f(t) >= b`, given `f(lo) >= b`.
//!
//! - Karma: a user's candidate keys are the integers of an interval `[l, h]` (in units of
//!   the common price, see [`super::karma`]), and the number of keys `>= t` is
//!   `max(0, h + 1 - t) - max(0, l - t)`: element `h + 1` with sign `+1` and element `l`
//!   with sign `-1`. The largest `t` with at least `b` keys `>= t` is the `b`-th largest key.
//! - Max-min with equal shares: `sum min(d, L) <= C` exactly when
//!   `sum over d > L of (d - L) >= D - C` (`D` the total demand): elements `d`, sign `+1`.
//!
//! One pass builds a histogram of the elements over at most [`MAX_BINS`] bins of equal
//! power-of-two width covering `[lo, hi]`: per bin the signed count and the signed sum,
//! from which `f` at every bin start is exact (`f(t) = S - t * K` over the bins above).
//! The answer lies in the highest bin whose start still has `f >= b`; a second pass
//! copies that bin's elements into a scratch buffer, and the search repeats on it with a
//! range `MAX_BINS` times narrower. The first level touches every element twice; later
//! levels only the elements of one bin. Whatever the range of the values (up to 2^64),
//! there are at most six levels, so the cost is O(n) and does not depend on the range.
//!
//! All buffers live in a [`Selector`], which a caller keeps between quanta: in the steady
//! state a selection allocates nothing (the scratch copies have room for every element
//! from the first selection of a size on, and the `i128` histogram, for sums that may
//! pass 2^62, is allocated by the first selection that needs it;
//! `host-lib/tests/steady_state.rs` counts).

/// log2 of the most bins one level uses.
const MAX_BIN_BITS: u32 = 11;
/// The most bins one level uses (2,048: the histogram stays in the L1/L2 cache).
pub const MAX_BINS: usize = 1 << MAX_BIN_BITS;
/// log2 of the fewest bins (small inputs use about one bin per element, so that clearing
/// the histogram never costs more than reading the input).
const MIN_BIN_BITS: u32 = 4;

/// A source of signed elements (offsets from the caller's base, so all `>= 0`).
pub(crate) trait Elements {
    /// Calls `visit(z, sign)` once per element, in any order.
    fn visit(&self, visit: impl FnMut(u64, i64));
    /// How many elements (decides the number of bins).
    fn count(&self) -> usize;
}

impl Elements for [(u64, i64)] {
    #[inline]
    fn visit(&self, mut visit: impl FnMut(u64, i64)) {
        for &(z, s) in self {
            visit(z, s);
        }
    }
    fn count(&self) -> usize {
        self.len()
    }
}

/// One level's input: the caller's elements on the first level, then the scratch copy
/// of the bin that holds the answer.
#[inline(always)]
fn feed<E: Elements + ?Sized>(first: bool, elements: &E, scratch: &[(u64, i64)], visit: impl FnMut(u64, i64)) {
    if first {
        elements.visit(visit);
    } else {
        scratch.visit(visit);
    }
}

/// The integer type of a selection's sums: `i64` when every sum provably fits (the
/// elements' count times their range below 2^62), else `i128`. The histogram, its scan
/// and the last level's sum all run in it.
pub(crate) trait Sum:
    Copy
    + Default
    + PartialOrd
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::AddAssign
{
    /// The element `z` or sign `s` (exact: only called where the bound holds).
    fn of_u64(z: u64) -> Self;
    /// A sign or count.
    fn of_i64(s: i64) -> Self;
    /// The target `b`, saturated (it is at most `f(0)`, which fits).
    fn of_i128(b: i128) -> Self;
    /// Widened back for the caller.
    fn wide(self) -> i128;
    /// This type's histogram in the selector: per bin the signed count and the signed sum.
    fn bins(sel: &mut Selector) -> &mut Vec<[Self; 2]>;
}

impl Sum for i64 {
    #[inline(always)]
    fn of_u64(z: u64) -> i64 {
        z as i64
    }
    #[inline(always)]
    fn of_i64(s: i64) -> i64 {
        s
    }
    fn of_i128(b: i128) -> i64 {
        b.clamp(i64::MIN as i128, i64::MAX as i128) as i64
    }
    fn wide(self) -> i128 {
        self as i128
    }
    fn bins(sel: &mut Selector) -> &mut Vec<[i64; 2]> {
        &mut sel.bins
    }
}

impl Sum for i128 {
    #[inline(always)]
    fn of_u64(z: u64) -> i128 {
        z as i128
    }
    #[inline(always)]
    fn of_i64(s: i64) -> i128 {
        s as i128
    }
    fn of_i128(b: i128) -> i128 {
        b
    }
    fn wide(self) -> i128 {
        self
    }
    fn bins(sel: &mut Selector) -> &mut Vec<[i128; 2]> {
        &mut sel.wide_bins
    }
}

/// Histogram and scratch buffers of the selection, kept between quanta.
#[derive(Clone, Debug, Default)]
pub struct Selector {
    bins: Vec<[i64; 2]>,
    wide_bins: Vec<[i128; 2]>,
    scratch: Vec<(u64, i64)>,
    next: Vec<(u64, i64)>,
}

impl Selector {
    /// The largest `t` in `[0, top]` with `f(t) >= b` (see the module doc), and
    /// `f(t + 1)`, given `f(0) >= b`, that `f` does not increase, and that every element
    /// lies in `[0, top + 1]`.
    pub(crate) fn largest_at_least<E: Elements + ?Sized>(&mut self, elements: &E, top: u64, b: i128) -> (u64, i128) {
        // |f| and every partial sum are at most count * (top + 1).
        if (elements.count() as u128) * (top as u128 + 1) < 1 << 62 {
            self.largest_at_least_in::<i64, E>(elements, top, b)
        } else {
            self.largest_at_least_in::<i128, E>(elements, top, b)
        }
    }

    /// [`Selector::largest_at_least`] with sums of type `A` (which must hold them).
    pub(crate) fn largest_at_least_in<A: Sum, E: Elements + ?Sized>(
        &mut self,
        elements: &E,
        top: u64,
        b: i128,
    ) -> (u64, i128) {
        let bin_bits = (usize::BITS - elements.count().max(1).leading_zeros()).clamp(MIN_BIN_BITS, MAX_BIN_BITS);
        let mut hist = std::mem::take(A::bins(self));
        if hist.len() < MAX_BINS + 1 {
            hist.resize(MAX_BINS + 1, [A::default(); 2]);
        }
        let b = A::of_i128(b);
        let mut scratch = std::mem::take(&mut self.scratch);
        let mut next = std::mem::take(&mut self.next);
        // The answer lies in [lo, hi]; the input's elements lie in [lo, hi + 1]; those
        // above hi + 1 are summed in (above_count, above_sum); those below lo never count.
        let (mut lo, mut hi) = (0u64, top);
        let (mut above_count, mut above_sum) = (A::default(), A::default());
        let mut first = true;
        let answer = loop {
            // Bin k of width W = 2^shift holds z in [lo + k W, lo + (k + 1) W - 1]; at
            // t_k = lo + k W - 1 (k >= 1) exactly the bins >= k count.
            let reach = hi - lo + 1; // the largest z - lo
            let shift = (u64::BITS - reach.leading_zeros()).saturating_sub(bin_bits);
            let bins = (reach >> shift) as usize + 1;
            let hist = &mut hist[..bins];
            hist.fill([A::default(); 2]);
            if shift == 0 {
                // Width 1: bin k holds only z = lo + k, so counts alone give f.
                feed(first, elements, &scratch, |z, s| hist[(z - lo) as usize][0] += A::of_i64(s));
                let bin = |k: usize| (hist[k][0], hist[k][0] * A::of_u64(lo + k as u64));
                // f at t_k = lo + k - 1 (bin 0 is never needed: f(lo) >= b).
                let (k, k_count, k_sum) = highest_good(bins, (above_count, above_sum), bin, |k, count, sum| {
                    k == 1 || sum - A::of_u64(lo + k as u64 - 1) * count >= b
                });
                let (t, (count, sum)) = (lo + k as u64 - 1, bin(k));
                let (after_count, after_sum) = (k_count - count, k_sum - sum);
                break (t, (after_sum - A::of_u64(t + 1) * after_count).wide());
            } else {
                feed(first, elements, &scratch, |z, s| {
                    let bin = &mut hist[((z - lo) >> shift) as usize];
                    bin[0] += A::of_i64(s);
                    bin[1] += A::of_i64(s) * A::of_u64(z);
                });
                let (k, k_count, k_sum) = highest_good(
                    bins,
                    (above_count, above_sum),
                    |k| (hist[k][0], hist[k][1]),
                    |k, count, sum| sum - A::of_u64(lo + ((k as u64) << shift) - 1) * count >= b,
                );
                // The answer is in [t_k, t_k + W - 1] (k >= 1) or [lo, lo + W - 2]
                // (k = 0), and no more than hi; bin k's elements are the next input.
                let width = 1u64 << shift;
                let new_lo = if k == 0 { lo } else { lo + ((k as u64) << shift) - 1 };
                let new_hi = if k == 0 { lo + width - 2 } else { new_lo.saturating_add(width - 1) }.min(hi);
                above_count = k_count - hist[k][0];
                above_sum = k_sum - hist[k][1];
                // Room for every element, so that a bin holding more elements than any
                // before does not allocate in the steady state (pages are touched only as
                // far as bins fill them; `scratch` is the other buffer of the swap).
                next.clear();
                next.reserve(elements.count());
                let (old_lo, kk) = (lo, k);
                let mut gather = |z: u64, s: i64| {
                    if ((z - old_lo) >> shift) as usize == kk {
                        next.push((z, s));
                    }
                };
                feed(first, elements, &scratch, &mut gather);
                std::mem::swap(&mut scratch, &mut next);
                first = false;
                (lo, hi) = (new_lo, new_hi);
                if lo == hi {
                    // One value left: f(lo + 1) from the elements above and bin k's.
                    let t1 = lo + 1;
                    let mut f1 = above_sum - A::of_u64(t1) * above_count;
                    for &(z, s) in &scratch {
                        if z > t1 {
                            f1 += A::of_i64(s) * A::of_u64(z - t1);
                        }
                    }
                    break (lo, f1.wide());
                }
            }
        };
        *A::bins(self) = hist;
        self.scratch = scratch;
        self.next = next;
        answer
    }
}

/// Bins a scan of the histogram sums at a time before it looks at single bins.
const BLOCK: usize = 16;

/// The largest `k` in `1..bins` at which `good(k, count, sum)` holds, with `count` and
/// `sum` the `start` pair plus the pairs `bin(j)` of the bins `j >= k`; `(0, all)` when
/// none does. `good` must hold below every `k` where it holds (as `f(t_k) >= b` does).
/// Scans from the top in blocks of [`BLOCK`] bins (their sums vectorise), then bin by
/// bin inside the block that holds the answer: about `bins + BLOCK` bins read, with a
/// test per block instead of a multiply and compare per bin.
#[inline(always)]
fn highest_good<A: Sum>(
    bins: usize,
    start: (A, A),
    bin: impl Fn(usize) -> (A, A),
    good: impl Fn(usize, A, A) -> bool,
) -> (usize, A, A) {
    let (mut count, mut sum) = start;
    let mut end = bins;
    while end > 0 {
        let begin = end.saturating_sub(BLOCK);
        let (mut block_count, mut block_sum) = (A::default(), A::default());
        for k in begin..end {
            let (c, s) = bin(k);
            block_count += c;
            block_sum += s;
        }
        if begin >= 1 && !good(begin, count + block_count, sum + block_sum) {
            (count, sum) = (count + block_count, sum + block_sum);
            end = begin;
            continue;
        }
        // The answer is in this block: bin by bin from its top (good holds at `begin`
        // if `begin >= 1`, so the loop returns by then).
        for k in (begin.max(1)..end).rev() {
            let (c, s) = bin(k);
            (count, sum) = (count + c, sum + s);
            if good(k, count, sum) {
                return (k, count, sum);
            }
        }
        let (c, s) = bin(0);
        return (0, count + c, sum + s);
    }
    (0, count, sum)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `f(t)` straight from the definition.
    fn f(elements: &[(u64, i64)], t: u64) -> i128 {
        elements.iter().filter(|&&(z, _)| z > t).map(|&(z, s)| s as i128 * (z - t) as i128).sum()
    }

    /// The answer by scanning every t (small ranges only).
    fn scan(elements: &[(u64, i64)], lo: u64, hi: u64, b: i128) -> u64 {
        (lo..=hi).rev().find(|&t| f(elements, t) >= b).expect("f(lo) >= b")
    }

    /// The selection, checked to report f(t + 1) right.
    /// Also checked: the `i128` sums give the same answer as the `i64` ones wherever
    /// those may be used.
    fn select(sel: &mut Selector, e: &[(u64, i64)], top: u64, b: i128) -> u64 {
        let (t, next) = sel.largest_at_least(e, top, b);
        assert_eq!((t, next), sel.largest_at_least_in::<i128, _>(e, top, b), "i128 sums");
        if (e.len() as u128) * (top as u128 + 1) < 1 << 62 {
            assert_eq!((t, next), sel.largest_at_least_in::<i64, _>(e, top, b), "i64 sums");
        }
        if t < u64::MAX {
            assert_eq!(next, f(e, t + 1), "f({} + 1)", t);
        }
        t
    }

    /// Intervals [l, h] as Karma builds them: +1 at h + 1, -1 at l.
    fn intervals(iv: &[(u64, u64)]) -> Vec<(u64, i64)> {
        iv.iter().flat_map(|&(l, h)| [(h + 1, 1), (l, -1)]).collect()
    }

    #[test]
    fn kth_largest_key_of_intervals() {
        // Keys: [3..5] and [4..9] -> 9 8 7 6 5 5 4 4 3.
        let e = intervals(&[(3, 5), (4, 9)]);
        let mut sel = Selector::default();
        let expected = [9, 8, 7, 6, 5, 5, 4, 4, 3];
        for (b, &want) in expected.iter().enumerate() {
            let shifted: Vec<(u64, i64)> = e.iter().map(|&(z, s)| (z - 3, s)).collect();
            assert_eq!(select(&mut sel, &shifted, 6, b as i128 + 1) + 3, want, "b = {}", b + 1);
        }
    }

    #[test]
    fn matches_a_scan_on_many_ranges() {
        // Deterministic pseudo-random instances with spans from 1 to 2^40 (several levels).
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut sel = Selector::default();
        for case in 0..400 {
            let width = 1u64 << (case % 41);
            let n = 1 + (next() % 40) as usize;
            let iv: Vec<(u64, u64)> = (0..n)
                .map(|_| {
                    let h = next() % width + 1_000;
                    let len = 1 + next() % 5;
                    (h + 1 - len.min(h + 1), h)
                })
                .collect();
            let e = intervals(&iv);
            let total: i128 = iv.iter().map(|&(l, h)| (h - l + 1) as i128).sum();
            let lo = iv.iter().map(|&(l, _)| l).min().unwrap();
            let hi = iv.iter().map(|&(_, h)| h).max().unwrap();
            let b = 1 + (next() as i128).rem_euclid(total);
            let e: Vec<(u64, i64)> = e.iter().map(|&(z, s)| (z - lo, s)).collect();
            let (hi, t) = (hi - lo, select(&mut sel, &e, hi - lo, b));
            let lo = 0;
            // The definition, checked at t and t + 1 (a scan is too slow for 2^40).
            assert!(f(&e, t) >= b, "case {case}: f({t}) < {b}");
            assert!(t == hi || f(&e, t + 1) < b, "case {case}: f({}) >= {b}", t + 1);
            if hi - lo < 5_000 {
                assert_eq!(t, scan(&e, lo, hi, b), "case {case}");
            }
        }
    }

    #[test]
    fn sums_at_the_i64_bound() {
        let mut sel = Selector::default();
        // One interval [0, top], count * (top + 1) just below 2^62: the i64 sums reach
        // 2^61 and the products t * count as much.
        let top = (1u64 << 61) - 2;
        let e = intervals(&[(0, top)]);
        for b in [1, 2, 1 << 40, top as i128 - 1, top as i128, top as i128 + 1] {
            assert_eq!(select(&mut sel, &e, top, b), top + 1 - b as u64, "b = {b}");
        }
    }

    #[test]
    fn the_full_u64_range_and_a_single_value() {
        let mut sel = Selector::default();
        // Demands 0 and u64::MAX: f(t) = sum (d - t) over d > t.
        let e = [(u64::MAX, 1), (0, 1)];
        assert_eq!(select(&mut sel, &e, u64::MAX - 1, 1), u64::MAX - 1);
        assert_eq!(select(&mut sel, &e, u64::MAX - 1, 5), u64::MAX - 5);
        assert_eq!(select(&mut sel, &[(1, 1)], 0, 1), 0);
        assert_eq!(select(&mut sel, &[(0, 1), (1, 1), (1, -1)], 0, 0), 0);
    }
}
