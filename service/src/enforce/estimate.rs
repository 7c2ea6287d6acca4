//! Demand measured from a tenant's class counters: what it sent over the last quantum,
//! and whether it was held back (docs/bandwidth.md#measured-demand).

use super::tc::Counters;

/// The measured-demand estimator's parameters (docs/serve.md#measured-demand).
#[derive(Debug, Clone, Copy)]
pub struct Estimator {
    /// Growth of a tenant that was held back (backlogged, over its limit or dropping).
    pub growth: f64,
    /// Headroom over what a tenant that was not held back sent.
    pub headroom: f64,
    /// Slices added to every estimate, so that a tenant that sent nothing can start.
    pub floor_slices: u64,
    /// The fraction of its allocation a tenant that sends as much or more is taken to
    /// be held back by (it may want more).
    pub busy: f64,
}

impl Default for Estimator {
    fn default() -> Self {
        Estimator { growth: 1.5, headroom: 1.1, floor_slices: 1, busy: 0.9 }
    }
}

impl Estimator {
    /// A tenant's demand for the next quantum from its counters over the last one
    /// (`before`, `after`), what it was allocated, the quantum's length and the slice's
    /// rate; at most `cap` slices. A tenant was held back if it dropped packets, used
    /// `busy` of its allocation or more (nine tenths by default), or (with no allocation) queued anything:
    /// it asks for `growth` times its allocation; otherwise for what it sent times
    /// `headroom`. `floor_slices` is added, so that a silent tenant can start again.
    pub fn demand(&self, before: Counters, after: Counters, alloc: u64, secs: f64, slice_bps: u64, cap: u64) -> u64 {
        let sent_bits = after.bytes.saturating_sub(before.bytes) as f64 * 8.0;
        let sent_slices = sent_bits / secs.max(1e-6) / slice_bps.max(1) as f64;
        let held_back = after.drops > before.drops
            || (alloc > 0 && sent_slices >= self.busy * alloc as f64)
            || (alloc == 0 && (after.backlog > 0 || after.overlimits > before.overlimits));
        let want = if held_back {
            (alloc.max(1) as f64 * self.growth).ceil().max(sent_slices.ceil())
        } else {
            (sent_slices * self.headroom).ceil()
        };
        (want as u64).saturating_add(self.floor_slices).min(cap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimator_grows_held_back_tenants_and_follows_the_others() {
        let e = Estimator::default();
        let c = |bytes, overlimits, backlog| Counters { bytes, drops: 0, overlimits, backlog };
        // 1 Mbit/s slices, 0.2 s quanta: 10 slices' worth is 250,000 bytes.
        assert_eq!(e.demand(c(0, 0, 0), c(250_000, 5, 0), 10, 0.2, 1_000_000, 100), 16, "used all of it");
        let dropped = Counters { drops: 3, ..c(125_000, 0, 0) };
        assert_eq!(e.demand(c(0, 0, 0), dropped, 10, 0.2, 1_000_000, 100), 16, "dropped packets");
        assert_eq!(e.demand(c(0, 0, 0), c(125_000, 7, 1500), 10, 0.2, 1_000_000, 100), 7, "half used: sent x 1.1 + 1");
        assert_eq!(e.demand(c(0, 0, 0), c(0, 0, 0), 10, 0.2, 1_000_000, 100), 1, "silent");
        assert_eq!(e.demand(c(0, 0, 0), c(0, 0, 1500), 0, 0.2, 1_000_000, 100), 3, "queued with nothing allocated");
        assert_eq!(e.demand(c(0, 0, 0), c(2_500_000, 9, 0), 90, 0.2, 1_000_000, 100), 100, "capped at the link");
    }
}
