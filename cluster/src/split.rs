//! The leader's split of a tenant's allocation among its hosts: max-min on the hosts'
//! measured demands, in whole slices.
//!
//! Each host gets at most its demand, and no host gets less than another unless it
//! asked for less: the hosts below the level get what they asked, the others the
//! level. Slices that do not divide evenly go one each to the hosts earliest in the
//! given order (the leader orders hosts by name). Slices left over once every host has
//! its demand (an allocation above the measured sum: declared demands) are spread the
//! same way, evenly with the remainder to the earliest hosts.
//!
//! Example (docs/agents.md): a tenant allocated 10 slices, measured at 2, 6 and 9 on
//! hosts a, b and c. An even split would be 3.33 each; a asks for 2, so it gets 2, and
//! the 8 left go to b and c at 4 each (both ask for more): a 2, b 4, c 4.

/// `total` slices split among hosts with these demands (in the hosts' order).
pub fn split(total: u64, demands: &[u64]) -> Vec<u64> {
    let n = demands.len();
    if n == 0 {
        return Vec::new();
    }
    let sum: u64 = demands.iter().sum();
    if total >= sum {
        let extra = total - sum;
        let (each, rest) = (extra / n as u64, (extra % n as u64) as usize);
        return demands.iter().enumerate().map(|(i, &d)| d + each + u64::from(i < rest)).collect();
    }
    // Hosts by demand (ties in the given order): those below the level take their
    // demand; the first that cannot sets the level for itself and all after it.
    let mut by_demand: Vec<usize> = (0..n).collect();
    by_demand.sort_by_key(|&i| (demands[i], i));
    let mut out = vec![0; n];
    let mut left = total;
    for (k, &i) in by_demand.iter().enumerate() {
        let hosts = (n - k) as u64;
        let level = left / hosts;
        if demands[i] <= level {
            out[i] = demands[i];
            left -= demands[i];
            continue;
        }
        // Every host from here asks for more than the level: each gets it, and the
        // remainder goes one each to the earliest of them in the given order.
        let mut capped: Vec<usize> = by_demand[k..].to_vec();
        capped.sort_unstable();
        let rest = (left % hosts) as usize;
        for (j, &h) in capped.iter().enumerate() {
            out[h] = level + u64::from(j < rest);
        }
        break;
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use proptest::prelude::*;

    use super::*;

    /// The definition, a slice at a time: each slice goes to the host with the least
    /// (of those below their demand; once all have it, the least over its demand),
    /// ties to the earliest.
    fn literal(total: u64, demands: &[u64]) -> Vec<u64> {
        let mut out = vec![0u64; demands.len()];
        if demands.is_empty() {
            return out;
        }
        for _ in 0..total {
            let below = (0..demands.len()).filter(|&i| out[i] < demands[i]).min_by_key(|&i| (out[i], i));
            let i = below.unwrap_or_else(|| (0..demands.len()).min_by_key(|&i| (out[i] - demands[i], i)).unwrap());
            out[i] += 1;
        }
        out
    }

    #[test]
    fn the_documented_example() {
        assert_eq!(split(10, &[2, 6, 9]), [2, 4, 4]);
        assert_eq!(literal(10, &[2, 6, 9]), [2, 4, 4]);
    }

    #[test]
    fn edges() {
        assert_eq!(split(5, &[]), Vec::<u64>::new());
        assert_eq!(split(0, &[3, 4]), [0, 0]);
        assert_eq!(split(7, &[0, 0]), [4, 3], "nothing measured: evenly, the remainder first");
        assert_eq!(split(9, &[2, 3]), [4, 5], "above the sum: each its demand and the rest evenly");
        assert_eq!(split(5, &[9, 9, 9]), [2, 2, 1]);
    }

    proptest! {
        #[test]
        fn split_is_the_literal_max_min(total in 0u64..200, demands in prop::collection::vec(0u64..60, 0..8)) {
            let got = split(total, &demands);
            prop_assert_eq!(&got, &literal(total, &demands));
            if !demands.is_empty() {
                prop_assert_eq!(got.iter().sum::<u64>(), total);
            }
        }
    }
}
