//! Periodic max-min fairness, weighted by fair share, in whole slices.
//!
//! The rule (one source of truth for software and hardware): at water level `L` user
//! `u` may hold `cap_u(L) = min(d_u, floor(L * f_u / f_max))` slices, where `f_max` is
//! the largest fair share. The allocation is `cap_u(L)` for the largest `L` with
//! `sum cap_u(L) <= C`, and the `R < n` slices left over go one each, lowest index
//! first, to the users whose cap grows at `L + 1`. With equal shares this is the plain
//! water-filling of `docs/spec/karma.md` (`cap = min(d, L)`). Because
//! `f_u <= f_max`, a cap grows by at most one slice per level, so the result is
//! exactly the slice-by-slice progressive filling of [`literal`].

use super::select::Elements;
use super::Workspace;

/// Fixed parameters of the caps.
struct Caps<'a> {
    fair_share: &'a [u64],
    f_max: u64,
    demand: &'a [u64],
}

impl Caps<'_> {
    /// `min(d_u, floor(level * f_u / f_max))`.
    fn cap(&self, u: usize, level: u128) -> u64 {
        let f = self.fair_share[u];
        if f == self.f_max {
            return (self.demand[u] as u128).min(level) as u64;
        }
        (self.demand[u] as u128).min(level * f as u128 / self.f_max as u128) as u64
    }
    fn total(&self, level: u128) -> u128 {
        (0..self.demand.len()).map(|u| self.cap(u, level) as u128).sum()
    }
}

/// Progressive filling, one level and one slice at a time (the oracle).
/// Cost grows with the final water level: meant for tests and small pools.
pub fn literal(fair_share: &[u64], capacity: u64, demand: &[u64]) -> Vec<u64> {
    let caps = Caps { fair_share, f_max: fair_share.iter().copied().max().unwrap_or(1), demand };
    let mut alloc = vec![0u64; demand.len()];
    let mut left = capacity;
    let mut level: u128 = 0;
    while left > 0 && alloc.iter().zip(demand).any(|(a, d)| a < d) {
        level += 1;
        for u in 0..demand.len() {
            if left > 0 && caps.cap(u, level) > alloc[u] {
                alloc[u] += 1;
                left -= 1;
            }
        }
    }
    alloc
}

/// Water-filling: the same result as [`literal`], in O(n). Allocates its result;
/// [`batched_into`] reuses buffers instead.
pub fn batched(fair_share: &[u64], capacity: u64, demand: &[u64]) -> Vec<u64> {
    let mut alloc = Vec::with_capacity(demand.len());
    batched_into(&mut Workspace::default(), fair_share, capacity, demand, &mut alloc);
    alloc
}

/// The demands as the selector's elements: `d`, sign `+1`.
struct Demands<'a>(&'a [u64]);

impl Elements for Demands<'_> {
    #[inline]
    fn visit(&self, mut visit: impl FnMut(u64, i64)) {
        for &d in self.0 {
            visit(d, 1);
        }
    }
    fn count(&self) -> usize {
        self.0.len()
    }
}

/// Water-filling into a reused buffer (`alloc` is overwritten).
///
/// With equal fair shares the caps are `min(d, L)`, and the largest level with
/// `sum min(d, L) <= C` is the largest `L` with `sum over d > L of (d - L) >= D - C`
/// (`D` the total demand): one radix selection ([`super::select`]) over the demands, a
/// constant number of passes. With unequal shares the caps `floor(L f / f_max)` are not
/// linear in `L`, and [`search`] finds the level by binary search.
pub fn batched_into(
    workspace: &mut Workspace,
    fair_share: &[u64],
    capacity: u64,
    demand: &[u64],
    alloc: &mut Vec<u64>,
) {
    let f0 = fair_share.first().copied().unwrap_or(1);
    if fair_share.iter().any(|&f| f != f0) {
        *alloc = search(fair_share, capacity, demand);
        return;
    }
    let (mut total, mut highest) = (0u128, 0u64);
    for &d in demand {
        total += d as u128;
        highest = highest.max(d);
    }
    alloc.clear();
    if total <= capacity as u128 {
        alloc.extend_from_slice(demand);
        return;
    }
    // S(0) = D >= D - C and S(highest) = 0 < D - C, so the level is below the highest
    // demand (which is >= 1).
    let (level, _) =
        workspace.select.largest_at_least(&Demands(demand), highest - 1, (total - capacity as u128) as i128);
    alloc.extend(demand.iter().map(|&d| d.min(level)));
    hand_out_leftovers(alloc, capacity, |u| demand[u] > level);
}

/// Water-filling by binary search on the level: O(n log(level range)). [`batched`]
/// uses it for pools with unequal fair shares.
pub fn search(fair_share: &[u64], capacity: u64, demand: &[u64]) -> Vec<u64> {
    let f_max = fair_share.iter().copied().max().unwrap_or(1);
    let caps = Caps { fair_share, f_max, demand };
    let total_demand: u128 = demand.iter().map(|&d| d as u128).sum();
    if total_demand <= capacity as u128 {
        return demand.to_vec();
    }
    // At level `hi` every cap equals its demand, so the total is above the capacity.
    let mut hi: u128 = (0..demand.len())
        .map(|u| (demand[u] as u128 * f_max as u128).div_ceil(fair_share[u] as u128))
        .max()
        .unwrap_or(0);
    let mut lo: u128 = 0; // total(0) = 0 <= capacity
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if caps.total(mid) <= capacity as u128 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let mut alloc: Vec<u64> = (0..demand.len()).map(|u| caps.cap(u, lo)).collect();
    hand_out_leftovers(&mut alloc, capacity, |u| caps.cap(u, lo + 1) > caps.cap(u, lo));
    alloc
}

/// At the water level `L` (`alloc` holds the caps at `L`, summing to at most `capacity`),
/// the fewer than n slices left go one each, lowest index first, to the users whose cap
/// grows at `L + 1`.
fn hand_out_leftovers(alloc: &mut [u64], capacity: u64, grows: impl Fn(usize) -> bool) {
    let mut left = capacity as u128 - alloc.iter().map(|&a| a as u128).sum::<u128>();
    for (u, a) in alloc.iter_mut().enumerate() {
        if left == 0 {
            break;
        }
        if grows(u) {
            *a += 1;
            left -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paper_example_max_min() {
        // docs/spec/karma.md, quanta 4 and 5: f = 2, C = 6.
        assert_eq!(batched(&[2, 2, 2], 6, &[2, 2, 4]), vec![2, 2, 2]);
        assert_eq!(batched(&[2, 2, 2], 6, &[2, 3, 5]), vec![2, 2, 2]);
        assert_eq!(batched(&[2, 2, 2], 6, &[3, 2, 1]), vec![3, 2, 1]);
        // Leftover slices go to the lowest indices above the level.
        assert_eq!(batched(&[3, 3, 3, 3], 9, &[1, 10, 10, 10]), vec![1, 3, 3, 2]);
    }

    #[test]
    fn weighted_caps_follow_shares() {
        // f = 1 and 3, C = 4, both demand plenty: level 3 gives caps 1 and 3.
        assert_eq!(batched(&[1, 3], 4, &[100, 100]), vec![1, 3]);
        assert_eq!(literal(&[1, 3], 4, &[100, 100]), vec![1, 3]);
        // The small user's unused share flows to the large one.
        assert_eq!(batched(&[1, 3], 4, &[0, 100]), vec![0, 4]);
    }
}
